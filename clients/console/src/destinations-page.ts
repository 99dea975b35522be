/** The Destinations view (#destinations): the tenant's SFTP servers and S3 buckets where files
 * are delivered. Create one (an SFTP server's host key is pinned: given, or fetched and shown
 * to confirm; an S3 role's trust policy and an SFTP key's public half are shown once), verify it
 * with its answer, confirm a fetched host key, delete it. */

import {
  ApiError,
  describeTarget,
  type DestinationRequest,
  type DestinationView,
  type ExportsClient,
  hostKeyToConfirm,
} from "@exports/client";

import { errorText } from "./facts.js";
import { markInvalid } from "./filters-form.js";

function byId<T extends HTMLElement>(id: string): T {
  const found = document.getElementById(id);
  if (!found) throw new Error(`the page has no #${id}`);
  return found as T;
}

function value(id: string): string {
  return byId<HTMLInputElement>(id).value.trim();
}

export class DestinationsView {
  private readonly rows = new Map<string, HTMLLIElement>();
  private bound = false;

  constructor(private readonly client: ExportsClient) {}

  async show(): Promise<void> {
    for (const id of ["new-destination", "destinations-section"]) byId(id).hidden = false;
    if (!this.bound) {
      this.bound = true;
      byId<HTMLFormElement>("destination-form").addEventListener("submit", (event) => {
        event.preventDefault();
        void this.create();
      });
      for (const radio of document.querySelectorAll<HTMLInputElement>('input[name="destination-kind"]')) {
        radio.addEventListener("change", () => this.showKind());
      }
      this.showKind();
    }
    byId("destinations").replaceChildren();
    this.rows.clear();
    const listed: DestinationView[] = [];
    for await (const destination of this.client.destinations()) listed.push(destination);
    for (const destination of listed.reverse()) this.put(destination);
    this.refreshEmpty();
  }

  hide(): void {
    for (const id of ["new-destination", "destinations-section"]) byId(id).hidden = true;
    byId("destination-once").replaceChildren();
  }

  private kind(): "sftp" | "s3" {
    return document.querySelector<HTMLInputElement>('input[name="destination-kind"]:checked')?.value === "s3" ? "s3" : "sftp";
  }

  /** Only the chosen kind's fields are shown (and required). */
  private showKind(): void {
    const kind = this.kind();
    for (const [id, on] of [["sftp-fields", kind === "sftp"], ["s3-fields", kind === "s3"]] as const) {
      const fields = byId<HTMLFieldSetElement>(id);
      fields.hidden = !on;
      fields.disabled = !on;
    }
  }

  private request(): DestinationRequest {
    const name = value("destination-name");
    if (this.kind() === "s3") {
      const kms = value("s3-kms-key");
      return {
        name,
        target: {
          kind: "s3",
          bucket: value("s3-bucket"),
          region: value("s3-region"),
          role_arn: value("s3-role"),
          prefix: value("s3-prefix"),
          ...(kms ? { server_side_encryption: "aws:kms", kms_key_arn: kms } : {}),
        },
      };
    }
    const password = byId<HTMLInputElement>("sftp-password").value;
    const fingerprint = value("sftp-fingerprint");
    const port = value("sftp-port");
    return {
      name,
      target: {
        kind: "sftp",
        host: value("sftp-host"),
        username: value("sftp-user"),
        path: value("sftp-path") || ".",
        ...(port ? { port: Number(port) } : {}),
        ...(fingerprint ? { host_key_fingerprint: fingerprint } : {}),
        ...(password ? { auth: "password", password } : {}),
      },
    };
  }

  private async create(): Promise<void> {
    const form = byId<HTMLFormElement>("destination-form");
    const error = byId("destination-form-error");
    error.textContent = "";
    markInvalid(form, null);
    try {
      const created = await this.client.createDestination(this.request());
      byId<HTMLInputElement>("sftp-password").value = "";
      this.showOnce(created);
      this.put(created);
      this.refreshEmpty();
      this.announce(`Destination ${created.name} created`);
    } catch (failure) {
      if (!(failure instanceof ApiError)) throw failure;
      error.textContent = errorText(failure);
      markInvalid(form, failure.field?.replace(/^target\./, "") ?? null);
    }
  }

  /** What the customer must paste on their side, which the API shows this once. */
  private showOnce(destination: DestinationView): void {
    const panel = byId("destination-once");
    panel.replaceChildren();
    const block = (title: string, text: string, id: string): void => {
      const heading = Object.assign(document.createElement("h3"), { textContent: title });
      const pre = Object.assign(document.createElement("pre"), { id, className: "secret-once", textContent: text });
      panel.append(heading, pre);
    };
    if (destination.public_key) {
      block("Public key: add it to the SFTP user's ~/.ssh/authorized_keys", destination.public_key, "once-public-key");
    }
    if (destination.trust_policy) block("Trust policy of the role", JSON.stringify(destination.trust_policy, null, 2), "once-trust-policy");
    if (destination.permissions_policy) {
      block("Permissions policy of the role", JSON.stringify(destination.permissions_policy, null, 2), "once-permissions-policy");
    }
    if (panel.childElementCount > 0) {
      panel.prepend(Object.assign(document.createElement("p"), { className: "hint", textContent: "Shown only this once: copy it now." }));
    }
  }

  /** Add or update ``destination``'s row (newest first). */
  private put(destination: DestinationView): void {
    let row = this.rows.get(destination.destination_id);
    if (!row) {
      row = document.createElement("li");
      row.className = "task destination";
      row.dataset["destinationId"] = destination.destination_id;
      row.innerHTML = `
        <div class="task-head"><span class="title"></span><span class="state"></span></div>
        <dl class="facts">
          <div class="wide"><dt>Where</dt><dd class="where"></dd></div>
          <div class="wide"><dt>Host key</dt><dd class="host-key"></dd></div>
        </dl>
        <p class="verify-result" aria-live="polite"></p>
        <p class="error destination-error"></p>
        <div class="actions">
          <button type="button" class="secondary" data-action="confirm">Confirm host key</button>
          <button type="button" class="secondary" data-action="verify">Verify</button>
          <button type="button" class="secondary" data-action="delete">Delete</button>
        </div>`;
      for (const button of row.querySelectorAll<HTMLButtonElement>("button[data-action]")) {
        button.addEventListener("click", () => void this.act(button.dataset["action"]!, row!, button));
      }
      this.rows.set(destination.destination_id, row);
      byId("destinations").prepend(row);
    }
    const views = row as HTMLLIElement & { view?: DestinationView };
    views.view = destination;
    const text = (selector: string, content: string): void => {
      row!.querySelector(selector)!.textContent = content;
    };
    text(".title", `${destination.name} · ${destination.kind}`);
    const state = row.querySelector<HTMLElement>(".state")!;
    state.textContent = destination.state === "ACTIVE" ? "active" : "host key to confirm";
    state.dataset["state"] = destination.state === "ACTIVE" ? "ACTIVE" : "PAUSED";
    text(".where", describeTarget(destination));
    const target = destination.target;
    const offered = hostKeyToConfirm(destination);
    const hostKey = target.kind === "sftp" ? (offered ? `offered ${offered}: compare it with the server's own` : (target.host_key_fingerprint ?? "-")) : "";
    text(".host-key", hostKey);
    row.querySelector<HTMLElement>(".host-key")!.parentElement!.hidden = target.kind !== "sftp";
    const confirm = row.querySelector<HTMLButtonElement>('[data-action="confirm"]')!;
    confirm.hidden = offered === null;
    confirm.setAttribute("aria-label", `Confirm host key of ${destination.name}`);
    row.querySelector('[data-action="verify"]')!.setAttribute("aria-label", `Verify ${destination.name}`);
    row.querySelector('[data-action="delete"]')!.setAttribute("aria-label", `Delete ${destination.name}`);
  }

  private async act(action: string, row: HTMLLIElement, button: HTMLButtonElement): Promise<void> {
    const destination = (row as HTMLLIElement & { view?: DestinationView }).view!;
    const error = row.querySelector(".destination-error")!;
    error.textContent = "";
    try {
      if (action === "confirm") {
        this.put(await this.client.confirmDestination(destination.destination_id, hostKeyToConfirm(destination)!));
      } else if (action === "verify") {
        row.querySelector(".verify-result")!.textContent = "Verifying…";
        const verdict = await this.client.verifyDestination(destination.destination_id);
        row.querySelector(".verify-result")!.textContent = verdict.ok
          ? "Verified: a probe file was written and removed."
          : `Failed at ${verdict.failed_step ?? "?"}: ${verdict.message ?? ""}`;
      } else if (button.textContent !== "Confirm delete") {
        // A second click deletes: a destination's schedules and exports would stop delivering.
        button.textContent = "Confirm delete";
      } else {
        await this.client.deleteDestination(destination.destination_id);
        row.remove();
        this.rows.delete(destination.destination_id);
        this.refreshEmpty();
        this.announce(`Destination ${destination.name} deleted`);
      }
    } catch (failure) {
      if (!(failure instanceof ApiError)) throw failure;
      error.textContent = errorText(failure);
    }
  }

  private announce(message: string): void {
    byId("destinations-announcer").textContent = message;
  }

  private refreshEmpty(): void {
    byId("no-destinations").hidden = this.rows.size > 0;
  }
}
