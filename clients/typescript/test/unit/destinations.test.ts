/** The destination calls against a scripted fetch (no stack): the requests they send, the
 * one-time public key and trust policy in a create's answer, pagination, verify's verdict, errors
 * as ApiErrors, and destinations named on a submit and a schedule. */

import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { ApiError, describeTarget, type DestinationView, hostKeyToConfirm } from "../../src/index.js";
import { json, scripted } from "./scripted.js";

const DST = "dst_01JEXAMPLE0000000000000000";
const FINGERPRINT = `SHA256:${"A".repeat(43)}`;

function sftp(changes: Partial<DestinationView> = {}): DestinationView {
  return {
    destination_id: DST,
    name: "Acme drop",
    kind: "sftp",
    state: "ACTIVE",
    target: {
      kind: "sftp",
      host: "sftp.acme.example",
      port: 22,
      username: "exports",
      path: "/incoming",
      auth: "key",
      host_key_fingerprint: FINGERPRINT,
      offered_host_key_fingerprint: null,
      public_key_fingerprint: FINGERPRINT,
    },
    encryption: { kind: "none", pgp_public_key: null },
    use: null,
    created_by: "carol",
    created_at: "2026-12-06T08:00:00Z",
    updated_at: "2026-12-06T08:00:00Z",
    trust_policy: null,
    permissions_policy: null,
    public_key: null,
    ...changes,
  } as DestinationView;
}

const S3_TARGET = {
  kind: "s3",
  bucket: "acme-exports",
  prefix: "daily/",
  region: "eu-central-1",
  role_arn: "arn:aws:iam::123456789012:role/exports-delivery",
  server_side_encryption: "AES256",
  kms_key_arn: null,
  external_id: "exports-acme-0123",
} as const;

describe("destinations", () => {
  test("create sends the body and the idempotency key; the answer carries the public key once", async () => {
    const { client, sent } = scripted(() => json(201, sftp({ public_key: "ssh-ed25519 AAAA exports" })));
    const created = await client.createDestination(
      { name: "Acme drop", target: { kind: "sftp", host: "sftp.acme.example", username: "exports", path: "/incoming" } },
      { idempotencyKey: "once" },
    );
    assert.equal(created.public_key, "ssh-ed25519 AAAA exports");
    const [request] = sent;
    assert.deepEqual([request?.method, request?.path], ["POST", "/v1/destinations"]);
    assert.equal(request?.headers.get("idempotency-key"), "once");
    assert.equal(request?.headers.get("authorization"), "Bearer t0ken");
    assert.deepEqual(request?.body, {
      name: "Acme drop",
      target: { kind: "sftp", host: "sftp.acme.example", username: "exports", path: "/incoming" },
    });
  });

  test("an S3 destination's trust policy and where it writes, for people", async () => {
    const trust = { Version: "2012-10-17", Statement: [] };
    const { client } = scripted(() => json(201, sftp({ kind: "s3", target: S3_TARGET, trust_policy: trust })));
    const created = await client.createDestination({
      name: "Acme bucket",
      target: { kind: "s3", bucket: "acme-exports", region: "eu-central-1", role_arn: S3_TARGET.role_arn },
    });
    assert.deepEqual(created.trust_policy, trust);
    assert.equal(describeTarget(created), "s3://acme-exports/daily/ (eu-central-1)");
    assert.equal(describeTarget(sftp()), "sftp://exports@sftp.acme.example:22/incoming");
  });

  test("a fetched host key waits to be confirmed; confirm sends its fingerprint", async () => {
    const waiting = sftp({
      state: "HOST_KEY_UNCONFIRMED",
      target: { ...(sftp().target as object), host_key_fingerprint: null, offered_host_key_fingerprint: FINGERPRINT },
    } as Partial<DestinationView>);
    assert.equal(hostKeyToConfirm(waiting), FINGERPRINT);
    assert.equal(hostKeyToConfirm(sftp()), null);
    const { client, sent } = scripted(() => json(200, sftp()));
    const confirmed = await client.confirmDestination("dst/1", FINGERPRINT);
    assert.equal(confirmed.state, "ACTIVE");
    assert.deepEqual(
      [sent[0]?.method, sent[0]?.path, sent[0]?.body],
      ["POST", "/v1/destinations/dst%2F1/confirm", { host_key_fingerprint: FINGERPRINT }],
    );
  });

  test("destinations() follows next_token; get, update and delete reach the destination's path", async () => {
    const pages: Record<string, unknown> = {
      first: { items: [sftp({ destination_id: "dst_2" })], next_token: "p2" },
      p2: { items: [sftp({ destination_id: "dst_1" })], next_token: null },
    };
    const { client, sent } = scripted((request) => {
      if (request.method === "DELETE") return new Response(null, { status: 204 });
      if (request.path === "/v1/destinations") return json(200, pages[request.query["next_token"] ?? "first"]);
      return json(200, sftp({ name: "Renamed" }));
    });
    const ids: string[] = [];
    for await (const destination of client.destinations(1)) ids.push(destination.destination_id);
    assert.deepEqual(ids, ["dst_2", "dst_1"]);
    assert.equal((await client.getDestination(DST)).destination_id, DST);
    assert.equal((await client.updateDestination(DST, { name: "Renamed" })).name, "Renamed");
    assert.equal(await client.deleteDestination(DST), undefined);
    assert.deepEqual(
      sent.map((request) => [request.method, request.path, request.query, request.body]),
      [
        ["GET", "/v1/destinations", { limit: "1" }, undefined],
        ["GET", "/v1/destinations", { limit: "1", next_token: "p2" }, undefined],
        ["GET", `/v1/destinations/${DST}`, {}, undefined],
        ["PATCH", `/v1/destinations/${DST}`, {}, { name: "Renamed" }],
        ["DELETE", `/v1/destinations/${DST}`, {}, undefined],
      ],
    );
  });

  test("verify answers the failed step and what to do; another tenant's is an ApiError 404", async () => {
    const { client } = scripted((request) =>
      request.path.endsWith("/verify")
        ? json(200, { ok: false, checked_at: "2026-12-06T08:00:00Z", failed_step: "AUTH", message: "add our key" })
        : json(404, { error: { code: "DESTINATION_NOT_FOUND", message: "no such destination" } }),
    );
    const verdict = await client.verifyDestination(DST);
    assert.deepEqual([verdict.ok, verdict.failed_step, verdict.message], [false, "AUTH", "add our key"]);
    await assert.rejects(client.getDestination("dst_other"), (error: unknown) => {
      assert.ok(error instanceof ApiError);
      assert.deepEqual([error.status, error.code], [404, "DESTINATION_NOT_FOUND"]);
      return true;
    });
  });

  test("a failed delivery is retried at its own path; the answer shows it pending again, a refusal says why", async () => {
    const pending = { destination_id: DST, status: "PENDING", attempts: 7, requested_retries: 1 };
    const task = { task_id: "exp_1", status: "COMPLETED", deliveries: [pending] };
    const { client, sent } = scripted(() =>
      sent.length === 1
        ? json(202, task)
        : json(409, { error: { code: "DELIVERY_IN_PROGRESS", message: "still being tried" } }),
    );
    const shown = await client.retryDelivery("exp_1", DST);
    assert.deepEqual(
      [sent[0]?.method, sent[0]?.path],
      ["POST", `/v1/exports/exp_1/deliveries/${DST}/retry`],
    );
    assert.deepEqual([shown.deliveries?.[0]?.status, shown.deliveries?.[0]?.requested_retries], ["PENDING", 1]);
    await assert.rejects(client.retryDelivery("exp_1", DST), (error: unknown) => {
      assert.ok(error instanceof ApiError);
      assert.deepEqual([error.status, error.code], [409, "DELIVERY_IN_PROGRESS"]);
      return true;
    });
  });

  test("a submit and a schedule name destinations and a path template", async () => {
    const accepted = { task_id: "exp_1", status: "PENDING", created_at: "2026-12-06T08:00:00Z", status_url: "/v1/exports/exp_1" };
    const { client, sent } = scripted((request) => json(request.path === "/v1/exports" ? 202 : 201, accepted));
    await client.submit({
      export_type: "orders",
      filters: { date_from: "2026-11-01", date_to: "2026-11-30" },
      destinations: [DST],
      path_template: "{type}/{date}/{file}",
    });
    await client.createSchedule({ export_type: "orders", every: { days: 1 }, destinations: [DST], path_template: "{file}" });
    const [submit, schedule] = sent.map((request) => request.body as Record<string, unknown>);
    assert.deepEqual([submit?.["destinations"], submit?.["path_template"]], [[DST], "{type}/{date}/{file}"]);
    assert.deepEqual([schedule?.["destinations"], schedule?.["path_template"]], [[DST], "{file}"]);
  });
});
