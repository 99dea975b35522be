/** The local stack the tests run against: its URL and test tokens come from the environment
 * (tests/e2e/test_web_client.py starts the stack and sets them). */

import { ExportsClient, type ClientOptions } from "../../src/index.js";

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: run these tests through make test (tests/e2e/test_web_client.py)`);
  return value;
}

export const API_URL = required("EXPORTS_API_URL");
export const TOKENS = { alice: required("EXPORTS_TOKEN_ALICE"), bob: required("EXPORTS_TOKEN_BOB") };

/** A day inside the stack's demo orders (the last 90 days), as YYYY-MM-DD. */
export function recent(daysAgo: number): string {
  return new Date(Date.now() - daysAgo * 86_400_000).toISOString().slice(0, 10);
}

/** A client of ``user`` that records the URL of every request it sends. */
export function recordingClient(
  user: keyof typeof TOKENS,
  options: Partial<ClientOptions> = {},
): { client: ExportsClient; requests: string[] } {
  const requests: string[] = [];
  const client = new ExportsClient({
    baseUrl: API_URL,
    token: TOKENS[user],
    WebSocket: null,
    fetch: (input, init) => {
      const request = input instanceof Request ? input : new Request(input, init);
      requests.push(`${request.method} ${new URL(request.url).pathname}`);
      return globalThis.fetch(input, init);
    },
    ...options,
  });
  return { client, requests };
}
