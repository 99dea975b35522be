/** A client whose fetch is a script (no stack): the requests it sends are recorded, the answers
 * come from the test. Shared by the unit suites of the calls. */

import { ExportsClient } from "../../src/index.js";

export interface Sent {
  method: string;
  path: string;
  query: Record<string, string>;
  headers: Headers;
  body: unknown;
}

/** A client whose fetch answers with ``answer`` and records every request. */
export function scripted(answer: (sent: Sent) => Response): { client: ExportsClient; sent: Sent[] } {
  const sent: Sent[] = [];
  const client = new ExportsClient({
    baseUrl: "http://api.test/",
    token: () => "t0ken",
    WebSocket: null,
    fetch: async (input, init) => {
      const request = input instanceof Request ? input : new Request(input, init);
      const url = new URL(request.url);
      const text = await request.text();
      const record = {
        method: request.method,
        path: url.pathname,
        query: Object.fromEntries(url.searchParams),
        headers: request.headers,
        body: text ? JSON.parse(text) : undefined,
      };
      sent.push(record);
      return answer(record);
    },
  });
  return { client, sent };
}

export function json(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), { status, headers: { "Content-Type": "application/json", ...headers } });
}
