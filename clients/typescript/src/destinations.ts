/** Destinations (docs/destinations.md): where a COMPLETED export's file is delivered, the
 * customer's SFTP server or S3 bucket. The types are the generated document's; the helpers
 * answer the questions every screen of them asks. */

import type { components } from "./schema.js";

export type DestinationView = components["schemas"]["DestinationView"];
export type DestinationRequest = components["schemas"]["DestinationRequest"];
export type DestinationPatch = components["schemas"]["DestinationPatch"];
export type DestinationList = components["schemas"]["DestinationList"];
export type VerificationView = components["schemas"]["VerificationView"];
/** One task's file delivered to one destination: `status`, `attempts`, `remote_path`, `error`. */
export type Delivery = components["schemas"]["Delivery"];

/** Where a destination's files go, for people: `sftp://user@host:22/dir`, `s3://bucket/prefix (region)`. */
export function describeTarget(destination: Pick<DestinationView, "target">): string {
  const target = destination.target;
  if (target.kind === "s3") return `s3://${target.bucket}/${target.prefix ?? ""} (${target.region})`;
  const path = target.path ?? ".";
  return `sftp://${target.username}@${target.host}:${target.port ?? 22}${path.startsWith("/") ? "" : "/"}${path}`;
}

/** The fingerprint an SFTP destination waits to have confirmed (null when none waits). */
export function hostKeyToConfirm(destination: DestinationView): string | null {
  if (destination.state !== "HOST_KEY_UNCONFIRMED" || destination.target.kind !== "sftp") return null;
  return destination.target.offered_host_key_fingerprint ?? null;
}
