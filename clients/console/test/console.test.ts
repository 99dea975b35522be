/** The export console in a real browser: Debian's Chromium driven by Playwright (playwright-core,
 * no browser of its own), against the local stack that serves the console at /console/. */

import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { after, before, describe, test } from "node:test";

import { type Browser, type BrowserContext, chromium, type Page, type Request } from "playwright-core";

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: run these tests through make test (tests/e2e/test_web_client.py)`);
  return value;
}

const API_URL = required("EXPORTS_API_URL");
const CONSOLE_URL = `${API_URL}/console/`;
const TOKENS = { alice: required("EXPORTS_TOKEN_ALICE"), bob: required("EXPORTS_TOKEN_BOB") };
// This machine's closed network: no background connections, no QUIC (the machine notes' flags).
const CHROMIUM_FLAGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];
const EXPORT_DONE_MS = 90_000;

let browser: Browser;

before(async () => {
  // Playwright gives every launch a new, empty profile (its own --user-data-dir).
  browser = await chromium.launch({ executablePath: process.env["CHROMIUM"] ?? "/usr/bin/chromium", args: CHROMIUM_FLAGS });
});
after(() => browser.close());

/** A page in a context of its own, recording every request it sends. */
async function openConsole(options: Parameters<Browser["newContext"]>[0] = {}): Promise<{
  context: BrowserContext;
  page: Page;
  requests: Request[];
  close: () => Promise<void>;
}> {
  const context = await browser.newContext({ acceptDownloads: true, ...options });
  const page = await context.newPage();
  const requests: Request[] = [];
  page.on("request", (request) => requests.push(request));
  const errors: string[] = [];
  page.on("pageerror", (error) => errors.push(error.message));
  await page.goto(CONSOLE_URL);
  const close = async (): Promise<void> => {
    await context.close();
    assert.deepEqual(errors, [], "the page threw nothing");
  };
  return { context, page, requests, close };
}

async function signIn(page: Page, user: keyof typeof TOKENS): Promise<void> {
  await page.getByLabel("Bearer token").fill(TOKENS[user]);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.locator("#new-export").waitFor({ state: "visible" });
  // The list is loaded once the type's filters are there (types are read first, then the list).
  await page.locator("#filters input").first().waitFor();
}

/** Submit the form as it stands; the new task's id (from the API's 202). */
async function submitForm(page: Page, submit: () => Promise<void>): Promise<string> {
  const [response] = await Promise.all([
    page.waitForResponse((answer) => answer.request().method() === "POST" && new URL(answer.url()).pathname === "/v1/exports"),
    submit(),
  ]);
  assert.equal(response.status(), 202, await response.text());
  return ((await response.json()) as { task_id: string }).task_id;
}

async function barReaches100(page: Page, taskId: string): Promise<void> {
  await page.waitForFunction(
    (id) => document.querySelector<HTMLProgressElement>(`[data-task-id="${id}"] progress`)?.value === 100,
    taskId,
    { timeout: EXPORT_DONE_MS },
  );
}

function taskGets(requests: Request[], taskId: string): Request[] {
  return requests.filter((request) => request.method() === "GET" && new URL(request.url()).pathname === `/v1/exports/${taskId}`);
}

describe("the export console", () => {
  test("submit from the form, watch the bar reach 100 %, download the file", async () => {
    const { page, requests, close } = await openConsole();
    const sockets: string[] = [];
    page.on("websocket", (socket) => sockets.push(socket.url()));
    await signIn(page, "alice");
    // Who is signed in: the user (this stack's demo types bind no tenant from the token).
    assert.equal(await page.locator("#who").textContent(), "Signed in as alice");
    await page.getByLabel("Export type").selectOption("orders");
    // The form follows the served schema: an optional enum is a select, a list of values checkboxes.
    assert.deepEqual(await page.getByLabel("Status", { exact: true }).locator("option").allTextContents(), [
      "any", "pending", "paid", "shipped", "delivered", "cancelled", "refunded",
    ]);
    assert.equal(await page.getByRole("group", { name: "Columns" }).getByRole("checkbox").count(), 13);
    await page.getByLabel("Format").selectOption("csv");
    const taskId = await submitForm(page, () => page.getByRole("button", { name: "Export", exact: true }).click());
    await barReaches100(page, taskId);
    const row = page.locator(`[data-task-id="${taskId}"]`);
    assert.equal(await row.locator(".status").textContent(), "completed");
    assert.match((await page.locator("#announcer").textContent()) ?? "", /completed, 100 %/);
    // Its filters, the file's size and when task and file expire.
    assert.match((await row.locator(".filters").textContent()) ?? "", /^date_from \d{4}-\d\d-\d\d · date_to \d{4}-\d\d-\d\d/);
    assert.match((await row.locator(".size").textContent()) ?? "", /^[\d.,]+ (bytes|KB|MB)$/);
    assert.ok(((await row.locator(".expires").textContent()) ?? "").length > 0, "an expiry is shown");

    const tickets = requests.filter((request) => new URL(request.url()).pathname === "/v1/stream-tickets");
    const ticketStatus = (await tickets[0]?.response())?.status();
    if (ticketStatus === 201) {
      // The stack pushes (push-server's branch): the bar moved on pushed events alone.
      assert.ok(sockets.length > 0, "a WebSocket was opened");
      assert.deepEqual(taskGets(requests, taskId).map((request) => request.url()), [], "no polling GET while the socket was up");
      assert.match((await page.locator("#transport").textContent()) ?? "", /pushed/);
    } else {
      // No push stream on this stack: the console polled, and said so.
      assert.ok(taskGets(requests, taskId).length > 0, `polled (stream-tickets answered ${ticketStatus})`);
      assert.match((await page.locator("#transport").textContent()) ?? "", /no push stream/);
    }

    const [download] = await Promise.all([page.waitForEvent("download"), row.getByRole("link", { name: /Download/ }).click()]);
    const file = await readFile((await download.path())!, "utf-8");
    const task = (await (await fetch(`${API_URL}/v1/exports/${taskId}`, { headers: { Authorization: `Bearer ${TOKENS.alice}` } })).json()) as {
      rows_written: number;
      file_name: string;
    };
    const [header, ...lines] = file.replace(/^\uFEFF/, "").trim().split(/\r?\n/);
    assert.match(header!, /^Order ID,/);
    assert.equal(lines.length, task.rows_written);
    assert.equal(download.suggestedFilename(), task.file_name);
    await close();
  });

  test("language and CSV dialect: a German file with semicolons and decimal commas", async () => {
    const { page, close } = await openConsole();
    await signIn(page, "alice");
    await page.getByLabel("Export type").selectOption("orders");
    await page.getByLabel("Format").selectOption("csv");
    await page.getByLabel("Language of the headers").selectOption("de");
    await page.getByLabel("CSV delimiter").selectOption(";");
    await page.getByLabel("CSV decimal separator").selectOption(",");
    const [posted] = await Promise.all([
      page.waitForRequest((request) => request.method() === "POST" && new URL(request.url()).pathname === "/v1/exports"),
      submitForm(page, () => page.getByRole("button", { name: "Export", exact: true }).click()),
    ]);
    const body = posted.postDataJSON() as { locale?: string; csv_dialect?: Record<string, string> };
    // Only what differs from the defaults is sent.
    assert.equal(body.locale, "de");
    assert.deepEqual(body.csv_dialect, { delimiter: ";", decimal_separator: "," });
    const taskId = ((await (await posted.response())!.json()) as { task_id: string }).task_id;
    await barReaches100(page, taskId);
    const row = page.locator(`[data-task-id="${taskId}"]`);
    const [download] = await Promise.all([page.waitForEvent("download"), row.getByRole("link", { name: /Download/ }).click()]);
    const [header, first] = (await readFile((await download.path())!, "utf-8")).trim().split(/\r?\n/);
    assert.ok(header!.split(";").length > 5, `semicolons between the fields: ${header}`);
    assert.ok(first!.split(";").some((cell) => /^-?\d+,\d+$/.test(cell)), `a number with a decimal comma: ${first}`);
    await close();
  });

  test("keyboard only: sign in, choose a type by typing, Tab to Export, submit", async () => {
    const { page, close } = await openConsole();
    await page.keyboard.press("Tab");
    assert.equal(await page.evaluate(() => document.activeElement?.id), "token");
    await page.keyboard.type(TOKENS.alice);
    await page.keyboard.press("Enter");
    await page.locator("#filters input").first().waitFor();
    // Signed in, the focus is on the type: choose customers by typing its first letters.
    assert.equal(await page.evaluate(() => document.activeElement?.id), "export-type");
    await page.keyboard.type("cust");
    assert.equal(await page.locator("#export-type").inputValue(), "customers");
    await page.locator("#filter-signed_up_from").waitFor();
    const taskId = await submitForm(page, async () => {
      for (let step = 0; step < 40; step += 1) {
        if ((await page.evaluate(() => document.activeElement?.id)) === "submit-export") break;
        await page.keyboard.press("Tab");
      }
      assert.equal(await page.evaluate(() => document.activeElement?.id), "submit-export", "Tab reaches the Export button");
      await page.keyboard.press("Enter");
    });
    const row = page.locator(`[data-task-id="${taskId}"]`);
    await row.waitFor();
    await page.waitForFunction(
      (id) => ["completed", "running", "pending"].includes(document.querySelector(`[data-task-id="${id}"] .status`)?.textContent ?? ""),
      taskId,
    );
    await barReaches100(page, taskId);
    // Its buttons are reachable and named for the task: Retry is offered only for ended failures.
    assert.equal(await row.getByRole("button", { name: /Cancel/ }).isHidden(), true);
    assert.equal(await row.getByRole("link", { name: /Download/ }).isVisible(), true);
    await close();
  });

  test("cancel a running export, then retry it: a new task in the list", async () => {
    const { page, close } = await openConsole();
    await signIn(page, "alice");
    await page.getByLabel("Export type").selectOption("orders");
    // A year read day by day: seconds of work, long enough to cancel it.
    const day = (daysAgo: number): string => new Date(Date.now() - daysAgo * 86_400_000).toISOString().slice(0, 10);
    // Distinct each run: an identical active export would answer with the existing task.
    const variant = 80 + Math.floor(Math.random() * 200);
    await page.getByLabel("Date From (required)").fill(day(365 + variant));
    await page.getByLabel("Date To (required)").fill(day(variant));
    const taskId = await submitForm(page, () => page.getByRole("button", { name: "Export", exact: true }).click());
    const row = page.locator(`[data-task-id="${taskId}"]`);
    await row.getByRole("button", { name: /^Cancel / }).click();
    await page.waitForFunction((id) => document.querySelector(`[data-task-id="${id}"] .status`)?.textContent === "cancelled", taskId);
    assert.equal(await row.getByRole("button", { name: /^Cancel / }).isHidden(), true);
    const [retried] = await Promise.all([
      page.waitForResponse((answer) => answer.request().method() === "POST" && answer.url().endsWith(`/v1/exports/${taskId}/retry`)),
      row.getByRole("button", { name: /^Retry / }).click(),
    ]);
    assert.equal(retried.status(), 202);
    const retryId = ((await retried.json()) as { task_id: string }).task_id;
    const retryRow = page.locator(`[data-task-id="${retryId}"]`);
    await retryRow.waitFor();
    await retryRow.getByRole("button", { name: /^Cancel / }).click();
    await page.waitForFunction((id) => document.querySelector(`[data-task-id="${id}"] .status`)?.textContent === "cancelled", retryId);
    await close();
  });

  test("bad input: the field the API names is marked and the message shown", async () => {
    const { page, requests, close } = await openConsole();
    await signIn(page, "alice");
    await page.getByLabel("Export type").selectOption("sales_report");
    await page.getByLabel(/^Currency/).fill("euro");
    const sentBefore = requests.length;
    await page.getByRole("button", { name: "Export", exact: true }).click();
    await page.locator("#form-error:not(:empty)").waitFor();
    const shown = (await page.locator("#form-error").textContent()) ?? "";
    assert.match(shown, /^filters\.currency: /);
    assert.equal(shown.split("filters.currency").length - 1, 1, `the field is named once: ${shown}`);
    assert.equal(await page.getByLabel(/^Currency/).getAttribute("aria-invalid"), "true");
    assert.ok(requests.slice(sentBefore).some((request) => request.method() === "POST"));
    await close();
  });

  test("bob never sees alice's tasks, in another browser or after alice signs out", async () => {
    const alice = await openConsole();
    await signIn(alice.page, "alice");
    const aliceTask = await submitForm(alice.page, () => alice.page.getByRole("button", { name: "Export", exact: true }).click());
    await alice.page.locator(`[data-task-id="${aliceTask}"]`).waitFor();
    const aliceIds = await alice.page.locator("li.task").evaluateAll((rows) => rows.map((row) => (row as HTMLElement).dataset["taskId"]));
    assert.ok(aliceIds.length > 0);

    const bob = await openConsole();
    await signIn(bob.page, "bob");
    const bobTask = await submitForm(bob.page, () => bob.page.getByRole("button", { name: "Export", exact: true }).click());
    await barReaches100(bob.page, bobTask);
    const bobIds = await bob.page.locator("li.task").evaluateAll((rows) => rows.map((row) => (row as HTMLElement).dataset["taskId"]));
    assert.ok(bobIds.includes(bobTask));
    assert.deepEqual(bobIds.filter((id) => aliceIds.includes(id)), []);

    // The same page, alice out and bob in: none of her rows stay.
    await alice.page.getByRole("button", { name: "Sign out" }).click();
    assert.equal(await alice.page.locator("li.task").count(), 0);
    await signIn(alice.page, "bob");
    await alice.page.locator(`[data-task-id="${bobTask}"]`).waitFor();
    const afterSwitch = await alice.page.locator("li.task").evaluateAll((rows) => rows.map((row) => (row as HTMLElement).dataset["taskId"]));
    assert.deepEqual(afterSwitch.filter((id) => aliceIds.includes(id)), []);
    await alice.close();
    await bob.close();
  });

  test("a phone's viewport: no horizontal scrolling, signed out and with tasks listed", async () => {
    const { page, close } = await openConsole({ viewport: { width: 360, height: 740 }, isMobile: true, hasTouch: true });
    const overflow = (): Promise<number> => page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    assert.ok((await overflow()) <= 0, "sign-in page fits");
    await signIn(page, "alice");
    await page.locator("li.task").first().waitFor();
    assert.ok((await overflow()) <= 0, `signed in: ${await overflow()} px too wide`);
    await close();
  });
});
