/** The Destinations view and choosing destinations, in Chromium against the local stack (started
 * by tests/e2e/test_web_client.py): as carol, a destination manager of initech, create the
 * stack's SFTP server as a destination (password, pinned host key) and verify it; create one
 * whose host key is fetched and confirmed, its public key shown once, then delete it; create the
 * customer's S3 bucket and see the trust policy once; deliver an export to the SFTP destination
 * and see the delivery in the task's row; offer it on the schedule form; alice (another tenant)
 * sees none of it. */

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import type { Browser, Page } from "playwright-core";

import { fillForm, launch, openConsole, required, rowAction, scheduleRow, submitSchedule } from "./schedules-steps.js";

const CONSOLE_URL = `${required("EXPORTS_API_URL")}/console/`;
const CAROL = required("EXPORTS_TOKEN_CAROL");
const ALICE = required("EXPORTS_TOKEN_ALICE");
// The targets of the stack's banner: its SFTP server and the customer's bucket.
const SFTP = JSON.parse(required("EXPORTS_SFTP_TARGET")) as Record<string, string | number>;
const S3 = JSON.parse(required("EXPORTS_S3_TARGET")) as Record<string, string>;

let browser: Browser;

before(async () => {
  browser = await launch();
});
after(() => browser.close());

async function signIn(page: Page, token: string): Promise<void> {
  await page.getByLabel("Bearer token").fill(token);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.locator("#new-export").waitFor({ state: "visible" });
}

async function openDestinations(page: Page): Promise<void> {
  await Promise.all([
    page.waitForResponse((answer) => answer.request().method() === "GET" && new URL(answer.url()).pathname === "/v1/destinations"),
    page.getByRole("link", { name: "Destinations" }).click(),
  ]);
  await page.locator("#destinations-section").waitFor({ state: "visible" });
}

/** Fill the SFTP fields given, click Create destination; the API's answer. */
async function createSftp(page: Page, name: string, fields: Record<string, string>): Promise<Record<string, unknown>> {
  await page.getByLabel("Destination name").fill(name);
  await page.getByLabel("SFTP server").check();
  for (const [label, value] of Object.entries(fields)) await page.getByLabel(label, { exact: true }).fill(value);
  const [response] = await Promise.all([
    page.waitForResponse((answer) => answer.request().method() === "POST" && new URL(answer.url()).pathname === "/v1/destinations"),
    page.getByRole("button", { name: "Create destination" }).click(),
  ]);
  assert.equal(response.status(), 201, await response.text());
  return (await response.json()) as Record<string, unknown>;
}

/** A call of the API as carol (what the console does is driven in the page). */
async function carolApi(method: string, path: string, body: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
  const answer = await fetch(`${required("EXPORTS_API_URL")}${path}`, {
    method,
    headers: { Authorization: `Bearer ${CAROL}`, "Content-Type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: answer.status, body: (await answer.json()) as Record<string, unknown> };
}

function row(page: Page, destinationId: unknown) {
  return page.locator(`li.destination[data-destination-id="${String(destinationId)}"]`);
}

describe("destinations in the console", () => {
  let sftpId = "";

  test("an SFTP server with a password and a pinned key: created, listed active, verified", async () => {
    const { page, close } = await openConsole(browser, CONSOLE_URL);
    await signIn(page, CAROL);
    await openDestinations(page);
    const created = await createSftp(page, "Initech SFTP", {
      "SFTP host": String(SFTP["host"]),
      "SFTP port": String(SFTP["port"]),
      "SFTP user": String(SFTP["username"]),
      Directory: String(SFTP["path"]),
      "Host key fingerprint": String(SFTP["host_key_fingerprint"]),
      "SFTP password": String(SFTP["password"]),
    });
    sftpId = String(created["destination_id"]);
    assert.equal(created["state"], "ACTIVE");
    const listed = row(page, sftpId);
    assert.equal(await listed.locator(".state").textContent(), "active");
    assert.equal(await listed.locator(".where").textContent(), `sftp://${SFTP["username"]}@127.0.0.1:${SFTP["port"]}${SFTP["path"]}`);
    assert.equal(await page.getByLabel("SFTP password").inputValue(), "", "the password is not kept in the form");
    assert.equal(await page.locator("#destination-once").textContent(), "", "a password destination has nothing to show once");
    await listed.getByRole("button", { name: "Verify Initech SFTP" }).click();
    await listed.locator(".verify-result", { hasText: "Verified" }).waitFor();
    await close();
  });

  test("a fetched host key waits for confirmation; the public key is shown once; delete asks twice", async () => {
    const { page, close } = await openConsole(browser, CONSOLE_URL);
    await signIn(page, CAROL);
    await openDestinations(page);
    const created = await createSftp(page, "Key login", {
      "SFTP host": "127.0.0.1",
      "SFTP port": String(SFTP["port"]),
      "SFTP user": String(SFTP["username"]),
    });
    assert.equal(created["state"], "HOST_KEY_UNCONFIRMED");
    assert.match((await page.locator("#once-public-key").textContent()) ?? "", /^ssh-ed25519 /);
    assert.match((await page.locator("#destination-once").textContent()) ?? "", /Shown only this once/);
    const listed = row(page, created["destination_id"]);
    assert.equal(await listed.locator(".state").textContent(), "host key to confirm");
    assert.match((await listed.locator(".host-key").textContent()) ?? "", new RegExp(`offered ${String(SFTP["host_key_fingerprint"]).replace(/[+/]/g, "\\$&")}`));
    await listed.getByRole("button", { name: "Confirm host key of Key login" }).click();
    await listed.locator(".state", { hasText: "active" }).waitFor();
    assert.equal(await listed.getByRole("button", { name: "Confirm host key of Key login" }).isHidden(), true);

    // A reload of the view shows no public key any more: the API showed it once.
    await page.getByRole("link", { name: "Exports" }).click();
    await openDestinations(page);
    assert.equal(await page.locator("#once-public-key").count(), 0);
    const remove = row(page, created["destination_id"]).getByRole("button", { name: "Delete Key login" });
    await remove.click();
    assert.equal(await remove.textContent(), "Confirm delete");
    await Promise.all([
      page.waitForResponse((answer) => answer.request().method() === "DELETE"),
      remove.click(),
    ]);
    await row(page, created["destination_id"]).waitFor({ state: "detached" });
    await close();
  });

  test("the customer's S3 bucket: the role's trust policy with its ExternalId is shown once", async () => {
    const { page, close } = await openConsole(browser, CONSOLE_URL);
    await signIn(page, CAROL);
    await openDestinations(page);
    await page.getByLabel("Destination name").fill("Initech bucket");
    await page.getByLabel("S3 bucket").check();
    await page.getByLabel("Bucket", { exact: true }).fill(S3["bucket"]!);
    await page.getByLabel("Region", { exact: true }).fill(S3["region"]!);
    await page.getByLabel("Role ARN", { exact: true }).fill(S3["role_arn"]!);
    await page.getByLabel("Key prefix", { exact: true }).fill("console/");
    const [response] = await Promise.all([
      page.waitForResponse((answer) => answer.request().method() === "POST" && new URL(answer.url()).pathname === "/v1/destinations"),
      page.getByRole("button", { name: "Create destination" }).click(),
    ]);
    const created = (await response.json()) as { destination_id: string; target: { external_id: string } };
    assert.equal(response.status(), 201);
    const policy = (await page.locator("#once-trust-policy").textContent()) ?? "";
    assert.match(policy, /sts:AssumeRole/);
    assert.ok(policy.includes(created.target.external_id), "the trust policy names the destination's ExternalId");
    assert.equal(await row(page, created.destination_id).locator(".where").textContent(), `s3://${S3["bucket"]}/console/ (${S3["region"]})`);
    await close();
  });

  test("an export delivered to the SFTP destination shows the delivery; the schedule form offers it", async () => {
    const { page, close } = await openConsole(browser, CONSOLE_URL);
    await signIn(page, CAROL);
    const picker = page.locator("#export-destinations");
    await picker.getByRole("checkbox", { name: /^Initech SFTP / }).check();
    await picker.getByLabel("Path template").fill("{task_id}-{file}");
    const [response] = await Promise.all([
      page.waitForResponse((answer) => answer.request().method() === "POST" && new URL(answer.url()).pathname === "/v1/exports"),
      page.getByRole("button", { name: "Export", exact: true }).click(),
    ]);
    assert.equal(response.status(), 202, await response.text());
    const sent = response.request().postDataJSON() as Record<string, unknown>;
    assert.deepEqual([sent["destinations"], sent["path_template"]], [[sftpId], "{task_id}-{file}"]);
    const taskId = String(((await response.json()) as Record<string, unknown>)["task_id"]);
    const delivery = page.locator(`li.task[data-task-id="${taskId}"] .deliveries li[data-destination-id="${sftpId}"]`);
    await delivery.and(page.locator('[data-status="DELIVERED"]')).waitFor({ timeout: 60_000 });
    assert.match((await delivery.textContent()) ?? "", new RegExp(`delivered to ${String(SFTP["path"])}/${taskId}-`));

    await Promise.all([
      page.waitForResponse((answer) => new URL(answer.url()).pathname === "/v1/destinations"),
      page.getByRole("link", { name: "Schedules" }).click(),
    ]);
    const schedulePicker = page.locator("#schedule-destinations");
    await schedulePicker.getByRole("checkbox", { name: /^Initech SFTP / }).waitFor();
    await close();
  });

  test("a failed delivery is retried from its row once the destination is fixed, and lands", async () => {
    // Given carol's destination on the stack's SFTP server whose OpenPGP key cannot encrypt (the
    // service checks only the armour): its deliveries FAIL at once, for her to fix.
    const unusableKey = "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nbm90IGEga2V5\n-----END PGP PUBLIC KEY BLOCK-----\n";
    const created = await carolApi("POST", "/v1/destinations", {
      name: `Broken key ${Date.now()}`,
      target: SFTP,
      encryption: { kind: "pgp", pgp_public_key: unusableKey },
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const brokenId = String(created.body["destination_id"]);
    const { page, close } = await openConsole(browser, CONSOLE_URL);
    await signIn(page, CAROL);
    const picker = page.locator("#export-destinations");
    await picker.getByRole("checkbox", { name: new RegExp(`^${String(created.body["name"])} `) }).check();
    await picker.getByLabel("Path template").fill("{task_id}-retried-{file}");
    const [response] = await Promise.all([
      page.waitForResponse((answer) => answer.request().method() === "POST" && new URL(answer.url()).pathname === "/v1/exports"),
      page.getByRole("button", { name: "Export", exact: true }).click(),
    ]);
    assert.equal(response.status(), 202, await response.text());
    const taskId = String(((await response.json()) as Record<string, unknown>)["task_id"]);
    const delivery = page.locator(`li.task[data-task-id="${taskId}"] .deliveries li[data-destination-id="${brokenId}"]`);
    await delivery.and(page.locator('[data-status="FAILED"]')).waitFor({ timeout: 60_000 });
    assert.match((await delivery.textContent()) ?? "", /OpenPGP key cannot encrypt/);

    // When she turns the destination's encryption off and clicks Retry delivery on that line
    const fixed = await carolApi("PATCH", `/v1/destinations/${brokenId}`, { encryption: { kind: "none" } });
    assert.equal(fixed.status, 200, JSON.stringify(fixed.body));
    const [retried] = await Promise.all([
      page.waitForResponse((answer) => answer.request().method() === "POST" && new URL(answer.url()).pathname.endsWith("/retry")),
      delivery.getByRole("button", { name: `Retry the delivery to ${brokenId}` }).click(),
    ]);

    // Then the API took it (202) and the line follows it to DELIVERED, where the file now is
    assert.equal(new URL(retried.url()).pathname, `/v1/exports/${taskId}/deliveries/${brokenId}/retry`);
    assert.equal(retried.status(), 202, await retried.text());
    await delivery.and(page.locator('[data-status="DELIVERED"]')).waitFor({ timeout: 60_000 });
    assert.match((await delivery.textContent()) ?? "", new RegExp(`delivered to ${String(SFTP["path"])}/${taskId}-retried-`));
    assert.equal(await delivery.getByRole("button").count(), 0, "a delivered line has no Retry");
    await close();
  });

  test("a schedule's destinations are changed from its row", async () => {
    const { page, close } = await openConsole(browser, CONSOLE_URL);
    await signIn(page, CAROL);
    await Promise.all([
      page.waitForResponse((answer) => answer.request().method() === "GET" && new URL(answer.url()).pathname === "/v1/schedules"),
      page.getByRole("link", { name: "Schedules" }).click(),
    ]);
    const name = `Delivered weekly ${Date.now()}`;
    await fillForm(page, { type: "orders", name, window: "previous_week", cron: "0 8 * * 1" });
    const { status, body } = await submitSchedule(page);
    assert.equal(status, 201, JSON.stringify(body));
    const scheduleId = String(body["schedule_id"]);
    const row = scheduleRow(page, scheduleId);
    assert.equal(await row.locator(".delivered-to").textContent(), "nowhere (a link only)");

    // Choose the SFTP destination and a template in the row, save: a PATCH of both
    await row.getByRole("button", { name: `Change the destinations of ${name}` }).click();
    await row.getByRole("checkbox", { name: /^Initech SFTP / }).check();
    await row.getByLabel("Path template").fill("{type}/{date}/{file}");
    const [patched] = await Promise.all([
      page.waitForResponse((answer) => answer.request().method() === "PATCH" && new URL(answer.url()).pathname === `/v1/schedules/${scheduleId}`),
      row.getByRole("button", { name: `Save the destinations of ${name}` }).click(),
    ]);
    assert.equal(patched.status(), 200, await patched.text());
    assert.deepEqual(patched.request().postDataJSON(), { destinations: [sftpId], path_template: "{type}/{date}/{file}" });
    assert.equal(await row.locator(".delivered-to").textContent(), `${sftpId} ({type}/{date}/{file})`);
    assert.equal(await row.locator(".row-destinations").isHidden(), true);

    // Untick it again: the schedule delivers nowhere
    await row.getByRole("button", { name: `Change the destinations of ${name}` }).click();
    await row.getByRole("checkbox", { name: /^Initech SFTP / }).uncheck();
    assert.equal(
      await rowAction(page, scheduleId, new RegExp(`^Save the destinations of ${name}$`), "PATCH", new RegExp(`/v1/schedules/${scheduleId}$`)),
      200,
    );
    await row.locator(".delivered-to", { hasText: "nowhere" }).waitFor();
    await close();
  });

  test("another tenant sees none of carol's destinations, on the page or the form", async () => {
    const { page, close } = await openConsole(browser, CONSOLE_URL);
    await signIn(page, ALICE);
    await page.locator("#export-destinations", { hasText: "No destinations yet" }).waitFor();
    await openDestinations(page);
    assert.equal(await page.locator("#no-destinations").isVisible(), true);
    assert.equal(await page.locator("li.destination").count(), 0);
    await close();
  });
});
