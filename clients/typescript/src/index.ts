/** @exports/client: the exports API from TypeScript, in browsers and Node 20. */

export { Backoff, type BackoffPolicy, SEED_BACKOFF } from "./backoff.js";
export {
  type CallerView,
  type ClientOptions,
  DEFAULT_CAPACITY_WAIT_SEC,
  type DownloadLink,
  type ExportAccepted,
  type ExportFormat,
  type ExportRequest,
  ExportsClient,
  type ExportTypeView,
  type ListQuery,
  type TaskList,
  type TypedExportRequest,
  type WatchOptions,
} from "./client.js";
export {
  type Delivery,
  type DestinationList,
  type DestinationPatch,
  type DestinationRequest,
  type DestinationView,
  describeTarget,
  hostKeyToConfirm,
  type VerificationView,
} from "./destinations.js";
export {
  ApiError,
  type ErrorDetail,
  ExportsError,
  type FieldProblem,
  type RefusalEstimate,
  StreamError,
  WatchTimeoutError,
} from "./errors.js";
export {
  EVENT_TYPES,
  isTerminal,
  type StreamTicket,
  SUBPROTOCOL,
  type TaskEvent,
  type TaskEventType,
  type TaskStatus,
  type TaskView,
  TERMINAL_STATUSES,
} from "./events.js";
export {
  describeTiming,
  type Every,
  type FeedRun,
  isRelativeWindow,
  type LastRun,
  type MailMessage,
  type NextRun,
  type PausedReason,
  type Permalink,
  RELATIVE_WINDOWS,
  type ScheduleChanges,
  type ScheduleList,
  type ScheduleRequest,
  type ScheduleRun,
  type ScheduleRunList,
  type ScheduleState,
  type ScheduleView,
  type WhenEmpty,
} from "./schedules.js";
export { StreamUnavailableError, type WebSocketConstructor, type WebSocketLike } from "./push.js";
export type { components, paths } from "./schema.js";
