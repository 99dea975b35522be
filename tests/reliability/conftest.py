"""Fixtures of the reliability suite: moto with the real resources (from the integration suite),
faults on the functions' clients, and every status change of every task (DynamoDB Streams)."""

import random
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import boto3
from types_boto3_s3.type_defs import MultipartUploadTypeDef

from exports.core.aws.task_table import key, quota_id
from local_stack.embedded_aws import REGION, Resources
from tests.integration.conftest import STREAMS_ENDPOINT, aws, orders, retry_clock, running_aws  # noqa: F401
from tests.reliability.faults import Faults

StatusHistory = Callable[[], dict[str, list[tuple[str | None, str | None]]]]


def status_history(resources: Resources) -> StatusHistory:
    """The tasks table's stream (the push channel's, turned on here when the resources have
    none); the returned function reads every (old, new) status of every task id, in order, from it."""
    arn = resources.tasks_stream_arn
    if not arn:
        dynamodb = boto3.client("dynamodb", region_name=REGION)
        arn = dynamodb.update_table(
            TableName=resources.tasks_table,
            StreamSpecification={"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
        )["TableDescription"]["LatestStreamArn"]
    streams = boto3.client("dynamodbstreams", region_name=REGION, endpoint_url=STREAMS_ENDPOINT)

    def read() -> dict[str, list[tuple[str | None, str | None]]]:
        changes: dict[str, list[tuple[str | None, str | None]]] = defaultdict(list)
        for shard in streams.describe_stream(StreamArn=arn)["StreamDescription"]["Shards"]:
            iterator = streams.get_shard_iterator(
                StreamArn=arn, ShardId=shard["ShardId"], ShardIteratorType="TRIM_HORIZON"
            )["ShardIterator"]
            while iterator:
                page = streams.get_records(ShardIterator=iterator, Limit=1000)
                for record in page["Records"]:
                    task_id = record["dynamodb"]["Keys"]["task_id"]["S"]
                    if not task_id.startswith("exp_"):
                        continue
                    old = record["dynamodb"].get("OldImage", {}).get("status", {}).get("S")
                    new = record["dynamodb"].get("NewImage", {}).get("status", {}).get("S")
                    changes[task_id].append((old, new))
                iterator = page.get("NextShardIterator") if page["Records"] else None
        return dict(changes)

    return read


def make_faults(seed: int) -> Faults:
    """Faults for the current thread, installed on the functions' shared clients."""
    faults = Faults(random.Random(seed))
    faults.install()
    return faults


def task_records(resources: Resources) -> dict[str, dict[str, Any]]:
    """Every task record (a scan is fine in a test), by id."""
    from exports.core.aws.dynamodb_items import from_item

    dynamodb = boto3.client("dynamodb", region_name=REGION)
    records = {}
    for page in dynamodb.get_paginator("scan").paginate(TableName=resources.tasks_table):
        for item in page["Items"]:
            if item["task_id"]["S"].startswith("exp_"):
                records[item["task_id"]["S"]] = from_item(item)
    return records


def objects_by_task(resources: Resources) -> dict[str, list[str]]:
    """Result objects under ``results/<task_id>/``."""
    s3 = boto3.client("s3", region_name=REGION)
    found: dict[str, list[str]] = defaultdict(list)
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=resources.bucket):
        for entry in page.get("Contents", []):
            found[entry["Key"].split("/")[1]].append(entry["Key"])
    return dict(found)


def quota(resources: Resources, user: str) -> int:
    """The user's count of active tasks (0 when the counter was never created)."""
    item = boto3.client("dynamodb", region_name=REGION).get_item(
        TableName=resources.tasks_table, Key=key(quota_id(user))
    )
    return int(item.get("Item", {}).get("active", {}).get("N", "0"))


def open_uploads(resources: Resources) -> list[MultipartUploadTypeDef]:
    """Multipart uploads started and neither completed nor aborted."""
    return boto3.client("s3", region_name=REGION).list_multipart_uploads(Bucket=resources.bucket).get("Uploads", [])
