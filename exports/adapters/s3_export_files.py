"""Result files that can take more than one invocation to write, their checkpoints and their tags.

:class:`S3ExportFiles` is the :class:`exports.adapters.s3_results.S3ResultStore` plus what long
exports need: an upload that tells its id and parts and can be picked up again from them, a
checkpoint object beside the result file, and tags on the finished object (rows, bytes,
sha256: known only at the end, and tags can be set on an object of any size without copying it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from botocore.exceptions import ClientError

from exports.adapters.aws_errors import error_code, translated
from exports.adapters.s3_results import S3ResultStore, content_disposition

_MISSING = frozenset({"NoSuchKey", "404", "NotFound"})


class S3ResumableUpload:
    """One multipart upload; parts are numbered on from the parts it was given."""

    def __init__(
        self, client: Any, bucket: str, key: str, upload_id: str, parts: Sequence[tuple[int, str]] = ()
    ) -> None:
        self._client = client
        self._bucket = bucket
        self._key = key
        self._upload_id = upload_id
        self._parts = list(parts)

    @property
    def upload_id(self) -> str:
        """S3's id of the upload."""
        return self._upload_id

    @property
    def parts(self) -> list[tuple[int, str]]:
        """Parts sent so far, as (number, ETag)."""
        return list(self._parts)

    def upload_part(self, data: bytes) -> None:
        """Send the next part."""
        number = len(self._parts) + 1
        with translated("upload part"):
            response = self._client.upload_part(
                Bucket=self._bucket, Key=self._key, UploadId=self._upload_id, PartNumber=number, Body=data
            )
        self._parts.append((number, response["ETag"]))

    def complete(self) -> None:
        """Assemble the parts into the visible object (parts sent beyond them, e.g. by a worker
        that died after the last checkpoint, are dropped by S3)."""
        with translated("complete upload"):
            self._client.complete_multipart_upload(
                Bucket=self._bucket,
                Key=self._key,
                UploadId=self._upload_id,
                MultipartUpload={"Parts": [{"PartNumber": number, "ETag": etag} for number, etag in self._parts]},
            )

    def abort(self) -> None:
        """Drop the upload and its parts."""
        with translated("abort upload"):
            self._client.abort_multipart_upload(Bucket=self._bucket, Key=self._key, UploadId=self._upload_id)


class S3ExportFiles(S3ResultStore):
    """:class:`exports.ports.ResultStore` with resumable uploads, checkpoints and result tags."""

    def start_upload(
        self, key: str, content_type: str, file_name: str, metadata: Mapping[str, str]
    ) -> S3ResumableUpload:
        """Begin a multipart upload whose object downloads as ``file_name``."""
        with translated("start upload"):
            response = self._client.create_multipart_upload(
                Bucket=self._bucket,
                Key=key,
                ContentType=content_type,
                ContentDisposition=content_disposition(file_name),
                Metadata=dict(metadata),
            )
        return S3ResumableUpload(self._client, self._bucket, key, response["UploadId"])

    def resume_upload(self, key: str, upload_id: str, parts: Sequence[tuple[int, str]]) -> S3ResumableUpload:
        """The upload ``upload_id`` of ``key``, continuing after ``parts``."""
        return S3ResumableUpload(self._client, self._bucket, key, upload_id, parts)

    def read_checkpoint(self, key: str) -> bytes | None:
        """The checkpoint object, or None if there is none."""
        try:
            response = self._client.get_object(Bucket=self._bucket, Key=key)
        except ClientError as error:
            if error_code(error) in _MISSING:
                return None
            with translated("read checkpoint"):
                raise
        with translated("read checkpoint"):
            return response["Body"].read()

    def write_checkpoint(self, key: str, body: bytes) -> None:
        """Store (or replace) the checkpoint object."""
        with translated("write checkpoint"):
            self._client.put_object(Bucket=self._bucket, Key=key, Body=body, ContentType="application/octet-stream")

    def delete_checkpoint(self, key: str) -> None:
        """Remove the checkpoint object (no error if it is gone)."""
        with translated("delete checkpoint"):
            self._client.delete_object(Bucket=self._bucket, Key=key)

    def tag_result(self, key: str, tags: Mapping[str, str]) -> None:
        """Replace the finished object's tags with ``tags``."""
        with translated("tag result"):
            self._client.put_object_tagging(
                Bucket=self._bucket,
                Key=key,
                Tagging={"TagSet": [{"Key": name, "Value": value} for name, value in tags.items()]},
            )
