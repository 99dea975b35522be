/** The Schedules view in Chromium against the scripted API (tests/client/fake_api.py's
 * FakeSchedules over HTTP, started by tests/e2e/test_web_client.py): the bodies the form sends,
 * what each row shows, every action, errors marking their field, the mailbox, tenancy, a phone.
 * No stack needed: these run before the service's schedules routes exist. */

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import type { Browser } from "playwright-core";

import {
  fillForm,
  launch,
  openConsole,
  openSchedules,
  overflow,
  required,
  rowAction,
  scheduleRow,
  submitSchedule,
} from "./schedules-steps.js";

const CONSOLE_URL = `${required("EXPORTS_FAKE_API_URL")}/console/`;
const ALICE = required("EXPORTS_FAKE_TOKEN_ALICE");
const BOB = required("EXPORTS_FAKE_TOKEN_BOB");

let browser: Browser;

before(async () => {
  browser = await launch();
});
after(() => browser.close());

describe("the schedules page (scripted API)", () => {
  test("create with a relative window and a cron: the body, then the row", async () => {
    const { page, close } = await openConsole(browser, CONSOLE_URL);
    await openSchedules(page, ALICE);
    // A type with a date range offers the window; its date fields then are not asked for.
    await page.locator("#schedule-form").getByLabel("Export type", { exact: true }).selectOption("orders");
    assert.equal(await page.locator("#schedule-window").isVisible(), true);
    assert.equal(await page.locator("#schedule-filter-date_from").isVisible(), false);
    await fillForm(page, {
      name: "Weekly orders",
      window: "previous_week",
      cron: "0 8 * * 1",
      zone: "Europe/Berlin",
      format: "xlsx",
      recipients: "finance@acme.example, ops@acme.example",
    });
    await page.locator("#schedule-form").getByLabel("Status", { exact: true }).selectOption("delivered");
    const { status, sent, body } = await submitSchedule(page);
    assert.equal(status, 201);
    assert.deepEqual(sent, {
      export_type: "orders",
      format: "xlsx",
      filters: { date_from: "previous_week", status: "delivered" },
      timezone: "Europe/Berlin",
      name: "Weekly orders",
      cron: "0 8 * * 1",
      recipients: ["finance@acme.example", "ops@acme.example"],
    });
    const row = scheduleRow(page, String(body["schedule_id"]));
    await row.waitFor();
    assert.match((await row.locator(".title").textContent()) ?? "", /^Weekly orders · orders · xlsx$/);
    assert.equal(await row.locator(".timing").textContent(), "0 8 * * 1 (Europe/Berlin)");
    assert.equal(await row.locator(".state").textContent(), "active");
    assert.equal(await row.locator(".next-run").textContent(), "2025-04-07 08:00 Europe/Berlin");
    assert.equal(await row.locator(".last-run").textContent(), "none yet");
    assert.equal(await row.locator(".failures").textContent(), "0");
    assert.match((await page.locator("#schedules-announcer").textContent()) ?? "", /Weekly orders created/);
    await close();
  });

  test("skipping empty runs is sent as when_empty; a type of dates offers no feed", async () => {
    const { page, close } = await openConsole(browser, CONSOLE_URL);
    await openSchedules(page, ALICE);
    await fillForm(page, { type: "orders", window: "previous_day", every: { count: 1, unit: "days" }, zone: "Etc/UTC" });
    // orders' range is of days: "the changes since the last run" needs a type's change column.
    assert.equal(await page.locator("#window-feed").isDisabled(), true);
    await page.locator("#schedule-skip-empty").check();
    const { status, sent, body } = await submitSchedule(page);
    assert.equal(status, 201);
    assert.equal(sent["when_empty"], "skip");
    const row = scheduleRow(page, String(body["schedule_id"]));
    await row.waitFor();
    assert.equal(await row.locator(".empty-fact").isVisible(), true);
    assert.equal(await row.locator(".feed-fact").isVisible(), false);
    // No COMPLETED run yet, no permalink: nothing to download or revoke.
    assert.equal(await row.locator('[data-action="latest"]').isVisible(), false);
    assert.equal(await row.locator('[data-action="revoke-permalink"]').isVisible(), false);
    await close();
  });

  test("an interval and the last N days; fixed dates send both ends", async () => {
    const { page, close } = await openConsole(browser, CONSOLE_URL);
    await openSchedules(page, ALICE);
    await fillForm(page, { type: "orders", window: "last_n_days", days: 3, every: { count: 2, unit: "hours" }, zone: "Asia/Kathmandu" });
    const interval = await submitSchedule(page);
    assert.equal(interval.status, 201);
    assert.deepEqual(interval.sent["every"], { hours: 2 });
    assert.equal(interval.sent["cron"], undefined);
    assert.deepEqual(interval.sent["filters"], { date_from: "last_n_days:3" });
    const row = scheduleRow(page, String(interval.body["schedule_id"]));
    assert.equal(await row.locator(".timing").textContent(), "every 2 hours (Asia/Kathmandu)");
    // The fake's clock is 2025-04-01 12:00 UTC: two hours on, 14:00 UTC is 19:45 in Kathmandu.
    assert.equal(await row.locator(".next-run").textContent(), "2025-04-01 19:45 Asia/Kathmandu");

    await fillForm(page, { window: "fixed", cron: "0 6 1 * *", zone: "Etc/UTC" });
    assert.equal(await page.locator("#schedule-filter-date_from").isVisible(), true);
    await page.locator("#schedule-filter-date_from").fill("2025-03-01");
    await page.locator("#schedule-filter-date_to").fill("2025-03-31");
    const fixed = await submitSchedule(page);
    assert.deepEqual(fixed.sent["filters"], { date_from: "2025-03-01", date_to: "2025-03-31" });
    assert.equal(fixed.sent["cron"], "0 6 1 * *");
    await close();
  });

  test("pause shows the reason, resume clears it; run now lists the run, whose link opens its export", async () => {
    const { page, close } = await openConsole(browser, CONSOLE_URL);
    await openSchedules(page, ALICE);
    await fillForm(page, { type: "orders", name: "To pause", window: "previous_day", cron: "0 7 * * *", zone: "Etc/UTC" });
    const scheduleId = String((await submitSchedule(page)).body["schedule_id"]);
    const row = scheduleRow(page, scheduleId);

    assert.equal(await rowAction(page, scheduleId, /^Pause To pause$/, "PATCH", /^\/v1\/schedules\//), 200);
    await page.waitForFunction((id) => document.querySelector(`[data-schedule-id="${id}"] .state`)?.textContent === "paused", scheduleId);
    assert.match((await row.locator(".paused-reason").textContent()) ?? "", /PAUSED_BY_USER/);
    assert.equal(await row.locator(".next-run").textContent(), "none");
    assert.equal(await row.getByRole("button", { name: /^Pause / }).isHidden(), true);
    assert.equal(await rowAction(page, scheduleId, /^Resume To pause$/, "PATCH", /^\/v1\/schedules\//), 200);
    await page.waitForFunction((id) => document.querySelector(`[data-schedule-id="${id}"] .state`)?.textContent === "active", scheduleId);
    assert.equal(await row.locator(".paused-reason").textContent(), "");

    assert.equal(await rowAction(page, scheduleId, /^Run now To pause$/, "POST", /\/run$/), 202);
    const link = row.locator(".runs a").first();
    await link.waitFor();
    assert.match((await row.locator(".runs li").first().textContent()) ?? "", /^Export \w+: pending, for 2025-04-01 12:00, 0 rows$/);
    await link.click();
    await page.locator("#tasks-section").waitFor({ state: "visible" });
    assert.equal(await page.locator("#new-schedule").isHidden(), true);
    assert.match(page.url(), /#exports\/exp_/);
    const taskId = decodeURIComponent(new URL(page.url()).hash.slice("#exports/".length));
    await page.locator(`li.task[data-task-id="${taskId}"]`).waitFor();
    await page.waitForFunction((id) => document.activeElement?.getAttribute("data-task-id") === id, taskId);
    // The schedules form left the page with its view: one form's labels at a time.
    assert.equal(await page.locator("#schedule-form").count(), 0);
    await close();
  });

  test("delete takes two clicks, then the row is gone", async () => {
    const { page, close } = await openConsole(browser, CONSOLE_URL);
    await openSchedules(page, BOB);
    await fillForm(page, { type: "orders", name: "Bob's daily", window: "previous_day", every: { count: 1, unit: "days" } });
    const scheduleId = String((await submitSchedule(page)).body["schedule_id"]);
    const row = scheduleRow(page, scheduleId);
    await row.getByRole("button", { name: /^Delete / }).click();
    assert.equal(await row.getByRole("button", { name: /^Confirm delete / }).isVisible(), true);
    assert.equal(await rowAction(page, scheduleId, /^Confirm delete /, "DELETE", /^\/v1\/schedules\//), 204);
    await row.waitFor({ state: "detached" });
    await close();
  });

  test("a refused recipient, window or zone: the message names it and its field is marked", async () => {
    const { page, close } = await openConsole(browser, CONSOLE_URL);
    await openSchedules(page, ALICE);
    await fillForm(page, { type: "orders", window: "previous_day", cron: "0 7 * * *", recipients: "someone@elsewhere.example" });
    const { status } = await submitSchedule(page);
    assert.equal(status, 422);
    await page.locator("#schedule-form-error:not(:empty)").waitFor();
    assert.match((await page.locator("#schedule-form-error").textContent()) ?? "", /^recipients\[0\]: /);
    assert.equal(await page.locator("#schedule-form").getByLabel("Recipients", { exact: true }).getAttribute("aria-invalid"), "true");

    // A window the type refuses is marked on the window choice (its date fields are hidden).
    await fillForm(page, { recipients: "", window: "last_n_days", days: 400 });
    assert.equal((await submitSchedule(page)).status, 422);
    await page.waitForFunction(() => document.getElementById("schedule-form-error")?.textContent?.startsWith("filters.date_from: "));
    assert.equal(await page.locator("#window-choice").getAttribute("aria-invalid"), "true");
    assert.equal(await page.evaluate(() => document.activeElement?.id), "window-choice");

    await fillForm(page, { window: "previous_day", zone: "Mars/Olympus" });
    assert.equal((await submitSchedule(page)).status, 422);
    await page.waitForFunction(() => document.getElementById("schedule-form-error")?.textContent?.startsWith("timezone: "));
    assert.equal(await page.locator("#schedule-form").getByLabel("Time zone", { exact: true }).getAttribute("aria-invalid"), "true");
    await close();
  });

  test("the mailbox lists what the embedded SES received, newest first", async () => {
    const { page, close } = await openConsole(browser, CONSOLE_URL);
    await openSchedules(page, ALICE);
    const mailbox = page.locator("#mailbox-section");
    await mailbox.waitFor({ state: "visible" });
    const subjects = await mailbox.locator(".mail-subject").allTextContents();
    assert.deepEqual(subjects, ["Weekly orders: failed", "Weekly orders: 42 rows"]);
    assert.match((await mailbox.locator(".mail .hint").first().textContent()) ?? "", /exports@local\.test → finance@acme\.example/);
    assert.match((await mailbox.locator(".mail-text").last().textContent()) ?? "", /http:\/\/files\.test\/exp_1\.xlsx/);
    await close();
  });

  test("bob never sees alice's schedules; signing out clears the view", async () => {
    const alice = await openConsole(browser, CONSOLE_URL);
    await openSchedules(alice.page, ALICE);
    await fillForm(alice.page, { type: "orders", name: "Alice only", window: "previous_day", cron: "0 9 * * *" });
    const aliceId = String((await submitSchedule(alice.page)).body["schedule_id"]);
    await scheduleRow(alice.page, aliceId).waitFor();

    const bob = await openConsole(browser, CONSOLE_URL);
    await openSchedules(bob.page, BOB);
    await bob.page.locator("#no-schedules, li.schedule").first().waitFor();
    assert.equal(await scheduleRow(bob.page, aliceId).count(), 0);

    await alice.page.getByRole("button", { name: "Sign out" }).click();
    assert.equal(await alice.page.locator("li.schedule").count(), 0);
    assert.equal(await alice.page.locator("#schedules-section").isHidden(), true);
    await alice.close();
    await bob.close();
  });

  test("a phone's viewport: the schedules view does not scroll sideways", async () => {
    const { page, close } = await openConsole(browser, CONSOLE_URL, { viewport: { width: 360, height: 740 }, isMobile: true, hasTouch: true });
    await openSchedules(page, ALICE);
    await page.locator("li.schedule").first().waitFor();
    assert.ok((await overflow(page)) <= 0, `${await overflow(page)} px too wide`);
    await close();
  });
});
