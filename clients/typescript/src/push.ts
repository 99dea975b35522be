/** One WebSocket to the push stream, shared by every watch() of a client. */

import { ExportsError, StreamError } from "./errors.js";
import { parseServerMessage, SUBPROTOCOL, type StreamTicket, type TaskEvent } from "./events.js";

/** What this module needs of a WebSocket: the browser's and the `ws` package's both fit. */
export interface WebSocketLike {
  readonly protocol: string;
  readonly readyState: number;
  send(data: string): void;
  close(code?: number, reason?: string): void;
  addEventListener(type: "message", listener: (event: { data: unknown }) => void): void;
  addEventListener(type: "open" | "close" | "error", listener: () => void): void;
}

/** A WebSocket class: `globalThis.WebSocket` in browsers, `ws`'s default export in Node 20. */
export type WebSocketConstructor = new (url: string, protocols: string[]) => WebSocketLike;

/** The stream could not be used: `offered` is false when the API has no push at all (no
 * POST /v1/stream-tickets), true when it has but the socket did not connect this time. */
export class StreamUnavailableError extends ExportsError {
  override name = "StreamUnavailableError";
  constructor(
    message: string,
    readonly offered: boolean,
  ) {
    super(message);
  }
}

/** What a subscription hears. */
export interface Subscriber {
  event(event: TaskEvent): void;
  error(error: StreamError): void;
  /** The connection dropped: subscribe again (the server then sends the current state first). */
  closed(): void;
}

const OPEN = 1;
// API Gateway closes a WebSocket idle for 10 minutes.
const PING_INTERVAL_MS = 5 * 60_000;

export class PushConnection {
  private socket: WebSocketLike | null = null;
  private opening: Promise<WebSocketLike> | null = null;
  private pinger: ReturnType<typeof setInterval> | null = null;
  private readonly subscribers = new Map<string, Set<Subscriber>>();

  /**
   * @param ticket fetches a fresh single-use ticket (POST /v1/stream-tickets)
   * @param WebSocketImpl the WebSocket class to connect with
   */
  constructor(
    private readonly ticket: () => Promise<StreamTicket>,
    private readonly WebSocketImpl: WebSocketConstructor,
  ) {}

  /** Whether a socket is connected right now. */
  get isOpen(): boolean {
    return this.socket !== null && this.socket.readyState === OPEN;
  }

  /** Subscribe ``subscriber`` to ``taskId``'s events (connecting first when needed); resolves
   * to the function that ends the subscription. */
  async subscribe(taskId: string, subscriber: Subscriber): Promise<() => void> {
    const socket = await this.open();
    let set = this.subscribers.get(taskId);
    if (!set) this.subscribers.set(taskId, (set = new Set()));
    set.add(subscriber);
    socket.send(JSON.stringify({ action: "subscribe", task_id: taskId }));
    return () => this.unsubscribe(taskId, subscriber, socket);
  }

  /** Close the socket; subscribers hear `closed`. */
  close(): void {
    this.socket?.close(1000, "client closed");
  }

  private unsubscribe(taskId: string, subscriber: Subscriber, socket: WebSocketLike): void {
    const set = this.subscribers.get(taskId);
    if (!set?.delete(subscriber) || set.size > 0) return;
    this.subscribers.delete(taskId);
    if (socket !== this.socket || !this.isOpen) return;
    socket.send(JSON.stringify({ action: "unsubscribe", task_id: taskId }));
    // Nobody listens any more: no idle socket keeps a Node process (or a server slot) alive.
    if (this.subscribers.size === 0) socket.close(1000, "no subscriptions");
  }

  private open(): Promise<WebSocketLike> {
    if (this.socket && this.isOpen) return Promise.resolve(this.socket);
    this.opening ??= this.connect().finally(() => {
      this.opening = null;
    });
    return this.opening;
  }

  private async connect(): Promise<WebSocketLike> {
    const { ticket, url } = await this.ticket();
    return new Promise((resolve, reject) => {
      let socket: WebSocketLike;
      try {
        socket = new this.WebSocketImpl(url, [SUBPROTOCOL, `ticket.${ticket}`]);
      } catch (error) {
        reject(new StreamUnavailableError(`cannot open ${url}: ${String(error)}`, true));
        return;
      }
      let opened = false;
      socket.addEventListener("open", () => {
        if (socket.protocol !== SUBPROTOCOL) {
          socket.close(1002, "subprotocol");
          return;
        }
        opened = true;
        this.socket = socket;
        this.pinger = setInterval(() => socket.send(JSON.stringify({ action: "ping" })), PING_INTERVAL_MS);
        resolve(socket);
      });
      socket.addEventListener("message", (event: { data: unknown }) => this.dispatch(event.data));
      socket.addEventListener("close", () => {
        if (opened) this.dropped(socket);
        else reject(new StreamUnavailableError(`the push stream at ${url} refused the connection`, true));
      });
      // An error is always followed by close, which decides.
      socket.addEventListener("error", () => undefined);
    });
  }

  private dropped(socket: WebSocketLike): void {
    if (socket !== this.socket) return;
    this.socket = null;
    if (this.pinger !== null) clearInterval(this.pinger);
    this.pinger = null;
    const everyone = [...this.subscribers.values()].flatMap((set) => [...set]);
    this.subscribers.clear();
    for (const subscriber of everyone) subscriber.closed();
  }

  private dispatch(raw: unknown): void {
    const message = parseServerMessage(raw);
    if (message === null) return;
    if (message.type === "error") {
      const error = new StreamError(message.error.code, message.error.message, message.task_id);
      for (const subscriber of this.subscribers.get(message.task_id ?? "") ?? []) subscriber.error(error);
    } else if (message.type !== "subscribed" && message.type !== "pong") {
      const event: TaskEvent = { ...message, source: "push" };
      for (const subscriber of this.subscribers.get(message.data.task_id) ?? []) subscriber.event(event);
    }
  }
}
