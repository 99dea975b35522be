"""Cleaning up after an export attempt: nothing partial, and no file its task does not own."""

from __future__ import annotations

import logging

from exports.domain.errors import ExportsError
from exports.ports import MultipartUpload, ResultStore
from exports.services.retries import retry_transient

logger = logging.getLogger(__name__)


def abort_upload(upload: MultipartUpload) -> None:
    """Drop an unfinished upload (S3 keeps, and bills, its parts until it is aborted), again on
    transient faults; an abort that keeps failing is left to the bucket's lifecycle rule."""
    try:
        retry_transient(upload.abort)
    except ExportsError:
        logger.warning("could not abort the upload; the bucket's lifecycle rule will", exc_info=True)


def remove_result(key: str, results: ResultStore) -> None:
    """Delete a result file that must not outlive its attempt, again on transient faults; one
    that stays anyway is logged and left to the bucket's expiry rule."""
    try:
        retry_transient(lambda: results.delete(key))
    except ExportsError:
        logger.error("could not delete a result file its task does not own", extra={"key": key}, exc_info=True)
