"""Result files on S3: multipart uploads that stay invisible until complete (and can be picked up
again by a later invocation), checkpoints of long exports beside the file, tags on the finished
object (rows, bytes, sha256: known only at the end, and tags need no copy of the object), and
presigned links."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING
from urllib.parse import quote

from exports.core.aws.errors import ObjectMissing, translated

if TYPE_CHECKING:
    from types_boto3_s3 import S3Client


def content_disposition(file_name: str) -> str:
    """An attachment header that keeps non-ASCII names intact (RFC 6266 / 5987)."""
    ascii_name = file_name.encode("ascii", "replace").decode().replace('"', "")
    return f"attachment; filename=\"{ascii_name}\"; filename*=UTF-8''{quote(file_name)}"


class S3MultipartUpload:
    """One multipart upload; parts are numbered on from the parts it was given, so an upload a
    previous invocation started can be picked up again from its id and parts."""

    def __init__(
        self, client: S3Client, bucket: str, key: str, upload_id: str, parts: Sequence[tuple[int, str]] = ()
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
        self.upload_part_number(len(self._parts) + 1, data)

    def upload_part_number(self, number: int, data: bytes) -> str:
        """Send ``data`` as part ``number`` (the parts of a fanned-out file come in any order);
        returns its ETag."""
        with translated("upload part"):
            response = self._client.upload_part(
                Bucket=self._bucket, Key=self._key, UploadId=self._upload_id, PartNumber=number, Body=data
            )
        self._parts.append((number, response["ETag"]))
        return str(response["ETag"])

    def complete(self) -> None:
        """Assemble the parts, in the order of their numbers, into the visible object (parts sent
        beyond them, e.g. by a worker that died after the last checkpoint, are dropped by S3)."""
        parts = sorted(self._parts)
        with translated("complete upload"):
            self._client.complete_multipart_upload(
                Bucket=self._bucket,
                Key=self._key,
                UploadId=self._upload_id,
                MultipartUpload={"Parts": [{"PartNumber": number, "ETag": etag} for number, etag in parts]},
            )

    def abort(self) -> None:
        """Drop the upload and its parts."""
        with translated("abort upload"):
            self._client.abort_multipart_upload(Bucket=self._bucket, Key=self._key, UploadId=self._upload_id)


class S3ResultStore:
    """:class:`exports.core.ports.ResultStore` on one bucket."""

    def __init__(self, client: S3Client, bucket: str) -> None:
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
            return str(
                self._client.generate_presigned_url(
                    "get_object",
                    Params={
                        "Bucket": self._bucket,
                        "Key": key,
                        "ResponseContentDisposition": content_disposition(file_name),
                    },
                    ExpiresIn=ttl_sec,
                )
            )

    def resume_upload(self, key: str, upload_id: str, parts: Sequence[tuple[int, str]]) -> S3MultipartUpload:
        """The upload ``upload_id`` of ``key``, continuing after ``parts``."""
        return S3MultipartUpload(self._client, self._bucket, key, upload_id, parts)

    def read_result(self, key: str, chunk_bytes: int = 1024 * 1024) -> Iterator[bytes]:
        """The object ``key``'s bytes, streamed in chunks."""
        with translated("read result"):
            body = self._client.get_object(Bucket=self._bucket, Key=key)["Body"]
            yield from body.iter_chunks(chunk_bytes)

    def read_checkpoint(self, key: str) -> bytes | None:
        """The checkpoint object, or None if there is none. Listed first (most exports have
        none): the worker may list only under the results prefix, and a GET of a missing key
        would be a 403 without a list permission the GET's own request can match."""
        try:
            with translated("read checkpoint"):
                listed = self._client.list_objects_v2(Bucket=self._bucket, Prefix=key, MaxKeys=1)
                if not any(item["Key"] == key for item in listed.get("Contents", [])):
                    return None
                return bytes(self._client.get_object(Bucket=self._bucket, Key=key)["Body"].read())
        except ObjectMissing:  # deleted between the list and the get
            return None

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
