"""Starting and stopping the whole local service."""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from werkzeug.wrappers import Request

from exports.core.config.env import Env
from exports.core.config.fan_out import FanOut
from exports.core.config.names import Names
from exports.core.config.queues import LANES
from exports.core.config.retry import AUDIT_BATCH_RETRY
from exports.core.config.worker import Worker
from exports.export_types.build import check_results, refuse_left_out
from exports.export_types.loader import DeclarationError, default_path, load_declarations
from exports.finishing.run_mail import task_of
from exports.finishing.webhooks.signing import new_secret
from exports.schedules.dynamodb_schedules import DynamoScheduleStore
from local_stack.customer_side import CustomerSide, start_customer_side
from local_stack.demo_api import DemoApi
from local_stack.demo_customers import demo_customers
from local_stack.demo_database import load_demo_data
from local_stack.demo_mysql import load_demo_mysql
from local_stack.demo_orders import demo_orders
from local_stack.embedded_aws import EmbeddedAws, Resources, client, create_resources, put_items
from local_stack.embedded_mariadb import EmbeddedMariaDB
from local_stack.embedded_postgres import EmbeddedPostgres
from local_stack.gateway import Gateway
from local_stack.local_users import (
    TOKENS_VARIABLE,
    USERS_VARIABLE,
    LocalUser,
    default_users_path,
    load_users,
    signed_in,
)
from local_stack.mailbox import Mailbox
from local_stack.schedule_loop import Clock, ScheduleLoop
from local_stack.scheduler_retries import SchedulerRetries
from local_stack.stream_poller import StreamPoller
from local_stack.websocket_gateway import WebSocketGateway
from local_stack.worker_loop import WorkerLoop

if TYPE_CHECKING:
    from exports.core.export_type import AnyExportType

logger = logging.getLogger("local_stack")

# The export console's build (`make console`), served at /console.
CONSOLE_DIR = Path(__file__).resolve().parents[1] / "clients" / "console" / "dist"
# The demo declaration's PostgreSQL source reads its URI from this variable (exports.toml).
DEMO_DATABASE_URL_ENV = "EXPORTS_SHOP_DATABASE_URL"
DEMO_DATABASE = "shop"
# The demo declaration's HTTP source reads the demo customer service's URL from this variable.
DEMO_API_URL_ENV = "EXPORTS_DEMO_API_URL"
# EXPORTS_DEMO_MYSQL=1 starts MariaDB with the demo tables and serves the MySQL demo declaration,
# whose source reads its URL from DEMO_MYSQL_URL_ENV.
DEMO_MYSQL_VARIABLE = "EXPORTS_DEMO_MYSQL"
DEMO_MYSQL_URL_ENV = "EXPORTS_SHOP_MYSQL_URL"
MYSQL_DEMO_DECLARATION = Path(__file__).resolve().parents[1] / "examples" / "mysql" / "exports.toml"
# The role the exports read the demo database as (the banner's URI is the superuser's, for you).
READER_ROLE = "exports_reader"
# The worker loops' long polls: a message is handed over as soon as it is sent whatever the wait,
# and a longer wait means fewer empty receives (an idle stack used 4% of a core at 1 s).
POLL_WAIT_SEC = 10
# How long stopping waits for the worker loops' current batches (a long poll in progress does not
# hold the stop up: the pollers are daemon threads).
STOP_GRACE_SEC = 3

# The collector's thresholds for local mode and the test processes: they hold a large heap that
# lives as long as they do (botocore's models, moto's backends, pydantic's schemas), which Python's
# defaults walked every few seconds (about 12% of a busy local stack's CPU, 15% of the moto test
# suites'). Young objects are collected rarer.
GC_THRESHOLDS = (50_000, 20, 100)

# Local mode lets a schedule fire every minute (docs/schedules.md; AWS deployments keep the
# config's default); EXPORTS_LOCAL_CLOCK=manual stops the schedule loop's wall-time ticks, so
# firings happen only on POST /local/clock (the end-to-end tests).
LOCAL_MIN_SCHEDULE_INTERVAL_MIN = "1"
CLOCK_VARIABLE = "EXPORTS_LOCAL_CLOCK"
MANUAL_CLOCK = "manual"

# Local defaults for Powertools: readable, quiet, no X-Ray daemon to talk to.
_POWERTOOLS_LOCAL = {
    "POWERTOOLS_SERVICE_NAME": "exports",
    "POWERTOOLS_METRICS_NAMESPACE": "Exports",
    "POWERTOOLS_TRACE_DISABLED": "true",
    "POWERTOOLS_METRICS_DISABLED": "true",
    "POWERTOOLS_LOG_LEVEL": "WARNING",
}


# make run's CORS origins, as the CDK app's cors_allowed_origins context.
CORS_VARIABLE = "EXPORTS_CORS_ALLOWED_ORIGINS"


@dataclass
class LocalConfig:
    """What ``make run`` can be told through the environment."""

    port: int = 8000
    aws_port: int = 0
    # The push channel's WebSocket API (0: a free port; -1: none, clients poll).
    ws_port: int = 0
    # The customer's SFTP server of the demo destination (0: a free port).
    sftp_port: int = 0
    # Bearer token -> the dev user it signs in, with the claims their token carries.
    tokens: dict[str, LocalUser] = field(default_factory=dict)
    users_file: Path = field(default_factory=default_users_path)
    demo_orders: int = 50_000
    # The DynamoDB demo table gets fewer orders: moto's queries are slow (see docs/performance.md).
    demo_dynamodb_orders: int = 2_000
    # The demo declaration reads no customers from DynamoDB; tests of the DynamoDB plugins do.
    demo_dynamodb_customers: int = 0
    webhook_secret: str = ""
    postgres_dir: Path = Path(".local/postgres")
    exports_config: str | None = None
    # Splitting large exports (docs/fan-out.md), as a deployment's CDK context sets them.
    partition_rows: int = FanOut.PARTITION_ROWS
    max_partitions: int = FanOut.MAX_PARTITIONS_DEFAULT
    # Origins of browser apps on another origin (the CDK app's cors_allowed_origins); none: CORS off.
    cors_allowed_origins: tuple[str, ...] = ()
    # EXPORTS_DEMO_MYSQL=1: an embedded MariaDB with the demo tables, and (unless EXPORTS_CONFIG
    # names another file) the MySQL demo declaration served.
    demo_mysql: bool = False
    mysql_dir: Path = Path(".local/mariadb")

    @classmethod
    def from_env(cls) -> LocalConfig:
        """``PORT``, ``EXPORTS_AWS_PORT``, ``EXPORTS_WS_PORT``, ``EXPORTS_SFTP_PORT``,
        ``EXPORTS_LOCAL_USERS``, ``EXPORTS_LOCAL_TOKENS``,
        ``EXPORTS_DEMO_ORDERS``,
        ``EXPORTS_DEMO_DYNAMODB_ORDERS``, ``EXPORTS_DEMO_DYNAMODB_CUSTOMERS``,
        ``EXPORTS_WEBHOOK_SECRET``,
        ``EXPORTS_POSTGRES_DIR``, ``EXPORTS_CONFIG``, ``EXPORTS_PARTITION_ROWS``,
        ``EXPORTS_MAX_PARTITIONS``, ``EXPORTS_CORS_ALLOWED_ORIGINS`` (comma-separated),
        ``EXPORTS_DEMO_MYSQL`` (``1``), ``EXPORTS_MYSQL_DIR``; tokens
        for the dev users and a webhook secret are generated when none is given."""
        users_file = Path(os.environ.get(USERS_VARIABLE) or default_users_path())
        demo_mysql = os.environ.get(DEMO_MYSQL_VARIABLE) == "1"
        return cls(
            port=int(os.environ.get("PORT", "8000")),
            aws_port=int(os.environ.get("EXPORTS_AWS_PORT", "0")),
            ws_port=int(os.environ.get("EXPORTS_WS_PORT", "0")),
            sftp_port=int(os.environ.get("EXPORTS_SFTP_PORT", "0")),
            tokens=signed_in(load_users(users_file), os.environ.get(TOKENS_VARIABLE)),
            users_file=users_file,
            demo_orders=int(os.environ.get("EXPORTS_DEMO_ORDERS", "50000")),
            demo_dynamodb_orders=int(os.environ.get("EXPORTS_DEMO_DYNAMODB_ORDERS", "2000")),
            demo_dynamodb_customers=int(os.environ.get("EXPORTS_DEMO_DYNAMODB_CUSTOMERS", "0")),
            webhook_secret=os.environ.get(Env.WEBHOOK_SECRET) or new_secret(),
            postgres_dir=Path(os.environ.get("EXPORTS_POSTGRES_DIR", ".local/postgres")).resolve(),
            exports_config=os.environ.get(Env.EXPORTS_CONFIG) or (str(MYSQL_DEMO_DECLARATION) if demo_mysql else None),
            partition_rows=int(os.environ.get(Env.PARTITION_ROWS, FanOut.PARTITION_ROWS)),
            max_partitions=int(os.environ.get(Env.MAX_PARTITIONS, FanOut.MAX_PARTITIONS_DEFAULT)),
            cors_allowed_origins=tuple(
                origin.strip() for origin in os.environ.get(CORS_VARIABLE, "").split(",") if origin.strip()
            ),
            demo_mysql=demo_mysql,
            mysql_dir=Path(os.environ.get("EXPORTS_MYSQL_DIR", ".local/mariadb")).resolve(),
        )


def ensure_free(port: int) -> None:
    """OSError naming ``port`` when something listens on it on 127.0.0.1."""
    with socket.socket() as probe:
        # As the gateway binds (werkzeug sets it): a port in TIME_WAIT is free.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError as error:
            raise OSError(error.errno, f"port {port} is in use (another make run? set PORT=...)") from None


class LocalStack:
    """Embedded AWS + embedded PostgreSQL + resources + demo data + worker loop + HTTP gateway."""

    def __init__(self, config: LocalConfig) -> None:
        self.config = config
        self.aws = EmbeddedAws(config.aws_port)
        self.postgres = EmbeddedPostgres(config.postgres_dir)
        self.database_uri = ""
        # The demo customer service (exports.toml's customers_api type reads it).
        self.demo_api: DemoApi | None = None
        self.mariadb = EmbeddedMariaDB(config.mysql_dir) if config.demo_mysql else None
        self.mysql_url = ""
        # The export types the API serves (every declared one: start-up fails otherwise).
        self.export_types: list[AnyExportType] = []
        self.resources: Resources | None = None
        self.gateway: Gateway | None = None
        self.websocket: WebSocketGateway | None = None
        self._stream: StreamPoller | None = None
        self._audit: StreamPoller | None = None
        self._workers: list[WorkerLoop] = []
        self._serving: threading.Thread | None = None
        self.schedule_loop: ScheduleLoop | None = None
        self.mailbox = Mailbox()
        self.customer: CustomerSide | None = None
        self.manual_clock = os.environ.get(CLOCK_VARIABLE) == MANUAL_CLOCK

    def start(self) -> None:
        """Bring everything up; returns once the API answers. A declaration error stops it
        before anything starts (:class:`DeclarationError`)."""
        load_declarations(self.config.exports_config or default_path())
        # Checked first: a port in use is reported at once, not after the demo data loaded.
        ensure_free(self.config.port)
        demo_api = self._start_demo_sources()
        endpoint = self.aws.start()
        self.resources = create_resources(
            partial(client, endpoint_url=endpoint), endpoint, max_partitions=self.config.max_partitions
        )
        local_environment = {
            **_POWERTOOLS_LOCAL,
            **self.resources.function_environment(),
            Env.WEBHOOK_SECRET: self.config.webhook_secret,
            # A developer receives callbacks on their own machine.
            Env.ALLOW_LOCAL_CALLBACKS: "true",
            DEMO_DATABASE_URL_ENV: self.postgres.uri(DEMO_DATABASE, user=READER_ROLE),
            DEMO_API_URL_ENV: demo_api.url,
            Env.PARTITION_ROWS: str(self.config.partition_rows),
            Env.MIN_SCHEDULE_INTERVAL_MIN: LOCAL_MIN_SCHEDULE_INTERVAL_MIN,
        }
        if self.mariadb is not None:
            local_environment[DEMO_MYSQL_URL_ENV] = self.mysql_url
        if self.config.exports_config:
            local_environment[Env.EXPORTS_CONFIG] = self.config.exports_config
        if self.config.ws_port >= 0:
            from functions.stream.handler import lambda_handler as stream_handler

            self.websocket = WebSocketGateway(stream_handler, port=self.config.ws_port)
            # Tickets name the WebSocket URL; the push function posts to the local management API.
            local_environment[Env.WEBSOCKET_URL] = self.websocket.url
            local_environment[Env.WEBSOCKET_ENDPOINT] = self.websocket.management_url
        for name, value in local_environment.items():
            os.environ.setdefault(name, value)
        # The customer's side of destinations: their SFTP server, their account's bucket and role.
        self.customer = start_customer_side(
            endpoint, self.resources.destination_principal_arn, sftp_port=self.config.sftp_port
        )
        today = datetime.now(UTC).date()
        seeded = put_items(self.resources.orders_table, demo_orders(self.config.demo_dynamodb_orders, today))
        logger.info("seeded %d demo orders into DynamoDB", seeded)
        if self.config.demo_dynamodb_customers:
            seeded = put_items(
                self.resources.customers_table, demo_customers(today, self.config.demo_dynamodb_customers)
            )
            logger.info("seeded %d demo customers into DynamoDB", seeded)
        try:
            self._check_export_types()
        except DeclarationError:
            self.aws.stop()
            self._stop_databases()
            raise
        # Handlers are imported only now: their clients must be built against the embedded AWS.
        from functions.submit.handler import lambda_handler as api_handler
        from functions.worker.handler import lambda_handler as worker_handler

        # One poller group per priority lane, as many as the lane's event source mapping allows.
        self._workers = [
            WorkerLoop(
                client("sqs", endpoint),
                self.resources.queue_urls[lane.name],
                worker_handler,
                batch_size=Worker.BATCH_SIZE,
                concurrency=lane.max_concurrency,
                wait_sec=POLL_WAIT_SEC,
            )
            for lane in LANES
        ]
        for loop in self._workers:
            loop.start()
        from functions.audit.handler import lambda_handler as audit_handler

        self._audit = StreamPoller(
            client("dynamodbstreams", endpoint),
            self.resources.tasks_stream_arn,
            audit_handler,
            function_name=Names.AUDIT_FUNCTION,
            retries=AUDIT_BATCH_RETRY.retries,
        )
        self._audit.start()
        if self.websocket is not None:
            from functions.push.handler import lambda_handler as push_handler

            streams = client("dynamodbstreams", endpoint)
            self._stream = StreamPoller(streams, self.resources.tasks_stream_arn, push_handler)
            self._stream.start()
            self.websocket.start()
        self.schedule_loop = self._schedule_loop(endpoint)
        self.gateway = Gateway(
            api_handler,
            self.config.tokens,
            port=self.config.port,
            console_dir=CONSOLE_DIR,
            cors_allowed_origins=self.config.cors_allowed_origins,
            local_routes={("GET", "/local/mailbox"): self._mailbox, ("POST", "/local/clock"): self._advance},
        )
        self._serving = threading.Thread(target=self.gateway.serve_forever, name="gateway", daemon=True)
        self._serving.start()

    def _schedule_loop(self, endpoint: str) -> ScheduleLoop:
        """The in-process Scheduler: it fires the stored schedules through the schedule
        function; on wall time, or only when told with a manual clock."""
        from functions.schedule.handler import lambda_handler as schedule_handler

        assert self.resources is not None
        sqs = client("sqs", endpoint)
        dlq_url = sqs.get_queue_url(QueueName=Names.SCHEDULE_DLQ)["QueueUrl"]
        loop = ScheduleLoop(
            DynamoScheduleStore(client("dynamodb", endpoint), self.resources.schedules_table),
            schedule_handler,
            Clock(),
            dead_letter=lambda event: sqs.send_message(QueueUrl=dlq_url, MessageBody=json.dumps(event)),
            deferred=SchedulerRetries(client("scheduler", endpoint), Names.SCHEDULE_GROUP),
        )
        if not self.manual_clock:
            loop.start()
        return loop

    def _mailbox(self, _request: Request, user: LocalUser) -> dict[str, Any]:
        """``GET /local/mailbox``: what the embedded SES sent for ``user``'s own runs, newest
        first (another user's run mail, with its download link, never shows)."""
        assert self.resources is not None
        dynamodb, tasks_table = client("dynamodb", self.resources.endpoint_url), self.resources.tasks_table
        owners: dict[str, str | None] = {}

        def owner(task_id: str) -> str | None:
            if task_id not in owners:
                item = dynamodb.get_item(TableName=tasks_table, Key={"task_id": {"S": task_id}})
                owners[task_id] = item.get("Item", {}).get("user_id", {}).get("S")
            return owners[task_id]

        mine = []
        for message in self.mailbox.items():
            task_id = task_of(message["text"])
            if task_id is not None and owner(task_id) == user.user_id:
                mine.append(message)
        return {"items": mine}

    def _advance(self, request: Request, _user: LocalUser) -> dict[str, Any]:
        """``POST /local/clock`` ``{"advance_sec": n}``: move the schedule loop's clock ahead
        and fire what is due now; what it fired."""
        assert self.schedule_loop is not None
        try:
            body = json.loads(request.get_data() or b"{}")
        except ValueError:
            raise ValueError("the body is not JSON") from None
        seconds = body.get("advance_sec", 0) if isinstance(body, dict) else None
        if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not 0 <= seconds <= 366 * 86400:
            raise ValueError("advance_sec: a number of seconds from 0 to 31622400")
        now = self.schedule_loop.advance(seconds)
        return {"now": now.isoformat(), "fired": self.schedule_loop.tick()}

    def _start_demo_sources(self) -> DemoApi:
        """The demo data's sources: PostgreSQL with the demo tables and its read-only role, the
        demo customer service, and MariaDB when asked for (EXPORTS_DEMO_MYSQL=1)."""
        self.postgres.start()
        self.postgres.create_database(DEMO_DATABASE)
        self.database_uri = self.postgres.uri(DEMO_DATABASE)
        orders, customers = load_demo_data(self.database_uri, self.config.demo_orders, datetime.now(UTC).date())
        logger.info("loaded %d demo orders and %d demo customers into PostgreSQL", orders, customers)
        self.postgres.create_reader(READER_ROLE)
        demo_api = self.demo_api = DemoApi(demo_customers(datetime.now(UTC).date()))
        demo_api.start()
        if self.mariadb is not None:
            self.mysql_url = self._start_mariadb()
        return demo_api

    def _start_mariadb(self) -> str:
        """Start the embedded MariaDB, load the demo tables as root and return the URL of its
        read-only account (what the MySQL demo declaration connects as)."""
        assert self.mariadb is not None
        self.mariadb.start()
        self.mariadb.create_database(DEMO_DATABASE)
        root = {"unix_socket": str(self.mariadb.socket), "user": "root", "database": DEMO_DATABASE}
        orders, customers = load_demo_mysql(root, self.config.demo_orders, datetime.now(UTC).date())
        logger.info("loaded %d demo orders and %d demo customers into MariaDB", orders, customers)
        return self.mariadb.url(DEMO_DATABASE)

    def _check_export_types(self) -> None:
        """Build the export types once, as the functions will, and describe each SQL type's
        query: a plugin factory that fails (or exits), a source whose variable is not set (its
        types would be left out) and a query that does not return its declared columns or order
        key stop start-up with a :class:`DeclarationError`, instead of answering 500, serving
        fewer types than the banner lists, or failing every export later."""
        from exports.core.config.settings import RegistrySettings
        from exports.export_types.composition import built_export_types

        settings = RegistrySettings.from_env(os.environ)
        declarations = load_declarations(settings.exports_config or default_path(), settings.source_overrides)
        built = built_export_types(settings, os.environ)
        refuse_left_out(declarations, built)
        check_results(declarations, built.types)
        self.export_types = built.types

    def stop(self) -> None:
        """Shut down in reverse order."""
        if self.gateway:
            self.gateway.shutdown()
        if self.schedule_loop:
            self.schedule_loop.stop()
        if self.websocket:
            self.websocket.shutdown()
        if self._stream:
            self._stream.stop()
        if self._audit:
            self._audit.stop()
        # Every lane's pollers are told at once, then given STOP_GRACE_SEC in all: Ctrl-C must not
        # wait for an export in flight, whose task and file go with the in-memory AWS anyway.
        for loop in self._workers:
            loop.request_stop()
        deadline = time.monotonic() + STOP_GRACE_SEC
        for loop in self._workers:
            loop.wait_for_batches(max(0.0, deadline - time.monotonic()))
        self.aws.stop()
        self._stop_databases()

    def _stop_databases(self) -> None:
        if self.customer is not None:
            self.customer.stop()
        self.postgres.stop()
        if self.demo_api:
            self.demo_api.shutdown()
        if self.mariadb is not None:
            self.mariadb.stop()
