"""Result files on S3: multipart uploads that stay invisible until complete, presigned links."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

from exports.adapters.aws_errors import translated


def content_disposition(file_name: str) -> str:
    """An attachment header that keeps non-ASCII names intact (RFC 6266 / 5987)."""
    ascii_name = file_name.encode("ascii", "replace").decode().replace('"', "")
    return f"attachment; filename=\"{ascii_name}\"; filename*=UTF-8''{quote(file_name)}"


class S3MultipartUpload:
    """One multipart upload; parts are numbered from 1 in the order they are sent."""

    def __init__(self, client: Any, bucket: str, key: str, upload_id: str) -> None:
        self._client = client
        self._bucket = bucket
        self._key = key
        self._upload_id = upload_id
        self._parts: list[dict[str, Any]] = []

    def upload_part(self, data: bytes) -> None:
        """Send the next part."""
        number = len(self._parts) + 1
        with translated("upload part"):
            response = self._client.upload_part(
                Bucket=self._bucket, Key=self._key, UploadId=self._upload_id, PartNumber=number, Body=data
            )
        self._parts.append({"PartNumber": number, "ETag": response["ETag"]})

    def complete(self) -> None:
        """Assemble the parts into the visible object."""
        with translated("complete upload"):
            self._client.complete_multipart_upload(
                Bucket=self._bucket,
                Key=self._key,
                UploadId=self._upload_id,
                MultipartUpload={"Parts": self._parts},
            )

    def abort(self) -> None:
        """Drop the upload and its parts."""
        with translated("abort upload"):
            self._client.abort_multipart_upload(Bucket=self._bucket, Key=self._key, UploadId=self._upload_id)


class S3ResultStore:
    """:class:`exports.ports.ResultStore` on one bucket."""

    def __init__(self, client: Any, bucket: str) -> None:
        self._client = client
        self._bucket = bucket

    def start_upload(
        self, key: str, content_type: str, file_name: str, metadata: Mapping[str, str]
    ) -> S3MultipartUpload:
        """Begin a multipart upload whose object downloads as ``file_name``."""
        with translated("start upload"):
            response = self._client.create_multipart_upload(
                Bucket=self._bucket,
                Key=key,
                ContentType=content_type,
                ContentDisposition=content_disposition(file_name),
                Metadata=dict(metadata),
            )
        return S3MultipartUpload(self._client, self._bucket, key, response["UploadId"])

    def delete(self, key: str) -> None:
        """Remove ``key`` (no error if it is already gone)."""
        with translated("delete result"):
            self._client.delete_object(Bucket=self._bucket, Key=key)

    def presign_download(self, key: str, file_name: str, ttl_sec: int) -> str:
        """A GET link valid for ``ttl_sec`` that saves the file as ``file_name``."""
        with translated("presign download"):
            return self._client.generate_presigned_url(
                "get_object",
                Params={
                    "Bucket": self._bucket,
                    "Key": key,
                    "ResponseContentDisposition": content_disposition(file_name),
                },
                ExpiresIn=ttl_sec,
            )
