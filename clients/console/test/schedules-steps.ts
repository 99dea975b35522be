/** Driving the console's Schedules view in Chromium: shared by the tests against the local stack
 * (schedules.test.ts) and against the scripted API (schedules-page.fake.ts). */

import assert from "node:assert/strict";

import { type Browser, type BrowserContext, chromium, type Page, type Request } from "playwright-core";

// This machine's closed network: no background connections, no QUIC (the machine notes' flags).
export const CHROMIUM_FLAGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

export function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: run these tests through make test (tests/e2e/test_web_client.py)`);
  return value;
}

/** Debian's Chromium; Playwright gives every launch a new, empty profile. */
export function launch(): Promise<Browser> {
  return chromium.launch({ executablePath: process.env["CHROMIUM"] ?? "/usr/bin/chromium", args: CHROMIUM_FLAGS });
}

export interface OpenPage {
  context: BrowserContext;
  page: Page;
  requests: Request[];
  close: () => Promise<void>;
}

/** The console at ``url`` in a context of its own, recording its requests; closing asserts the
 * page threw nothing. */
export async function openConsole(browser: Browser, url: string, options: Parameters<Browser["newContext"]>[0] = {}): Promise<OpenPage> {
  const context = await browser.newContext(options);
  const page = await context.newPage();
  const requests: Request[] = [];
  page.on("request", (request) => requests.push(request));
  const errors: string[] = [];
  page.on("pageerror", (error) => errors.push(error.message));
  await page.goto(url);
  const close = async (): Promise<void> => {
    await context.close();
    assert.deepEqual(errors, [], "the page threw nothing");
  };
  return { context, page, requests, close };
}

/** Sign in, then open the Schedules view from the header (its form and list loaded). */
export async function openSchedules(page: Page, token: string): Promise<void> {
  await page.getByLabel("Bearer token").fill(token);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.locator("#new-export").waitFor({ state: "visible" });
  await Promise.all([
    page.waitForResponse((answer) => answer.request().method() === "GET" && new URL(answer.url()).pathname === "/v1/schedules"),
    page.getByRole("link", { name: "Schedules" }).click(),
  ]);
  await page.locator("#schedule-form").waitFor();
  await page.locator("#schedules-section").waitFor({ state: "visible" });
  assert.equal(await page.getByRole("link", { name: "Schedules" }).getAttribute("aria-current"), "page");
}

export interface FormChoices {
  type?: string;
  name?: string;
  /** A value of the window select: previous_day, previous_week, ..., last_n_days, fixed. */
  window?: string;
  days?: number;
  cron?: string;
  every?: { count: number; unit: "minutes" | "hours" | "days" };
  zone?: string;
  recipients?: string;
  format?: string;
}

/** Fill the New schedule form. */
export async function fillForm(page: Page, choices: FormChoices): Promise<void> {
  const form = page.locator("#schedule-form");
  if (choices.type) await form.getByLabel("Export type", { exact: true }).selectOption(choices.type);
  if (choices.name !== undefined) await form.getByLabel("Name", { exact: true }).fill(choices.name);
  if (choices.window) await form.getByLabel("Each run exports", { exact: true }).selectOption(choices.window);
  if (choices.days !== undefined) await form.getByLabel("Number of days", { exact: true }).fill(String(choices.days));
  if (choices.format) await form.getByLabel("Format", { exact: true }).selectOption(choices.format);
  if (choices.every) {
    await form.getByLabel("at a fixed interval").check();
    await form.getByLabel("Every", { exact: true }).fill(String(choices.every.count));
    await form.getByLabel("Unit", { exact: true }).selectOption(choices.every.unit);
  } else if (choices.cron) {
    await form.getByLabel("on a cron expression").check();
    await form.getByLabel("Cron expression", { exact: true }).fill(choices.cron);
  }
  if (choices.zone) await form.getByLabel("Time zone", { exact: true }).fill(choices.zone);
  if (choices.recipients !== undefined) await form.getByLabel("Recipients", { exact: true }).fill(choices.recipients);
}

/** Click Create schedule; the POST's request body and the API's answer. */
export async function submitSchedule(page: Page): Promise<{ status: number; sent: Record<string, unknown>; body: Record<string, unknown> }> {
  const [response] = await Promise.all([
    page.waitForResponse((answer) => answer.request().method() === "POST" && new URL(answer.url()).pathname === "/v1/schedules"),
    page.getByRole("button", { name: "Create schedule" }).click(),
  ]);
  return {
    status: response.status(),
    sent: response.request().postDataJSON() as Record<string, unknown>,
    body: (await response.json()) as Record<string, unknown>,
  };
}

/** The row of a schedule. */
export function scheduleRow(page: Page, scheduleId: string) {
  return page.locator(`li.schedule[data-schedule-id="${scheduleId}"]`);
}

/** Click one of a row's buttons and wait for the API's answer to the call it makes. */
export async function rowAction(page: Page, scheduleId: string, button: RegExp, method: string, path: RegExp): Promise<number> {
  const [response] = await Promise.all([
    page.waitForResponse((answer) => answer.request().method() === method && path.test(new URL(answer.url()).pathname)),
    scheduleRow(page, scheduleId).getByRole("button", { name: button }).click(),
  ]);
  return response.status();
}

/** The page scrolls sideways by this many pixels (0 or less: it fits). */
export function overflow(page: Page): Promise<number> {
  return page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
}
