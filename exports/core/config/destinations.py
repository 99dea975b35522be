"""Limits of delivery destinations (docs/destinations.md), shared by the code and the CDK app."""

from __future__ import annotations

from typing import Final


class Destinations:
    """How many destinations a tenant keeps, and the bounds of their fields."""

    MAX_PER_TENANT: Final = 100
    # How many destinations one export or schedule may deliver to.
    MAX_PER_EXPORT: Final = 5
    NAME_MAX_LENGTH: Final = 128
    # An S3 key is at most 1,024 bytes: the prefix leaves room for the path template's part.
    S3_PREFIX_MAX_LENGTH: Final = 512
    # A file to a customer's bucket goes up in parts of this size past this size (one PutObject
    # below it): one PutObject takes at most 5 GB, a multipart upload 5 TB, and the object
    # appears only when its upload completes, whole (an upload that fails is aborted).
    S3_MULTIPART_BYTES: Final = 64 * 1024 * 1024
    SFTP_PATH_MAX_LENGTH: Final = 1024
    SFTP_USERNAME_MAX_LENGTH: Final = 128
    SFTP_PASSWORD_MAX_LENGTH: Final = 1024
    SFTP_PORT_DEFAULT: Final = 22
    # A ZIP password shorter than this is refused: AES-256 is only as strong as its password.
    ZIP_PASSWORD_MIN_LENGTH: Final = 12
    ZIP_PASSWORD_MAX_LENGTH: Final = 128
    # An armoured OpenPGP public key with a few subkeys and signatures (RSA-4096: some 3-10 KB)
    # fits several times over; and a key one character too long still fits in a request body
    # (Limits.MAX_BODY_BYTES), so it is a 422 naming the field, not a 413.
    PGP_PUBLIC_KEY_MAX_BYTES: Final = 32 * 1024
    # Random bytes of a service-generated ExternalId (hex: twice as many characters).
    EXTERNAL_ID_BYTES: Final = 24
    # An SFTP connection (TCP, SSH handshake, login) gives up after this long; a probe in all
    # after the second (verify answers within API Gateway's 30 seconds).
    CONNECT_TIMEOUT_SEC: Final = 10
    PROBE_TIMEOUT_SEC: Final = 20
    # One delivery of a file to one SFTP destination (connect, write, rename) gives up after this
    # long; the function that delivers has time for every destination a task names.
    DELIVERY_TIMEOUT_SEC: Final = 120
    # The error the workflow retries a file delivery on (FILE_DELIVERY_RETRY): the callback function
    # raises it while a destination may still take the file.
    DELIVERY_RETRYABLE_ERROR: Final = "DeliveryRetryable"
    # The codes of a FAILED delivery that are our side's to fix, not the customer's: its secret
    # unreadable (gone, or the function may not read it), or given up without a customer's error
    # (our copy of the file, our function failing). They page (Metric.FILE_DELIVERY_FAULT); every
    # other code (their server, login, permissions, key, a destination they deleted) is a ticket.
    OUR_SIDE_ERROR_CODES: Final = frozenset({"DESTINATION_SECRET_MISSING", "DELIVERY_FAILED"})
    # The probe file verify writes and removes (a dot file: hidden from most listings).
    PROBE_FILE_PREFIX: Final = ".exports-probe-"
    # Deleted destinations' secrets stay recoverable this long (Secrets Manager's 7..30 days).
    SECRET_RECOVERY_DAYS: Final = 7
