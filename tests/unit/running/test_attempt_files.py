"""AttemptFiles: the one owner of what an export attempt puts in the result store."""

import pytest

from exports.core.errors import ExportsError
from exports.running.attempt_files import AttemptFiles, ResultTarget, attempt_key
from tests.unit.builders import make_task
from tests.unit.export_fakes import FakeFiles

TASK = make_task(attempt=2)
TARGET = ResultTarget(attempt_key(TASK, "orders.csv"), "orders.csv", "text/csv")


class TagsFail(FakeFiles):
    def tag_result(self, key, tags):
        raise ExportsError("tag result: AccessDenied")


def test_the_file_checkpoint_and_staging_have_their_places_under_the_task():
    files = AttemptFiles(TASK, FakeFiles())
    assert TARGET.key == f"results/{TASK.task_id}/2/orders.csv"
    assert files.checkpoint_key == f"results/{TASK.task_id}/checkpoint.bin"
    assert files.staging_key("plan.json") == f"results/{TASK.task_id}/2/fan-out/plan.json"
    assert files.owns(TARGET.key) and not files.owns(f"results/{TASK.task_id}x/2/orders.csv")


def test_a_completed_file_is_tagged_and_the_checkpoint_goes():
    store = FakeFiles()
    files = AttemptFiles(TASK, store)
    files.write_checkpoint(b"state")
    upload = files.start(TARGET, {"task-id": TASK.task_id})
    upload.upload_part(b"rows")
    files.complete(upload, TARGET.key, {"rows": "1"})
    assert store.objects[TARGET.key]["body"] == b"rows" and store.tags[TARGET.key] == {"rows": "1"}
    assert files.read_checkpoint() is None


def test_a_file_whose_tagging_fails_is_removed_and_nothing_is_aborted_after_it():
    store = TagsFail()
    files = AttemptFiles(TASK, store)
    upload = files.start(TARGET, {})
    upload.upload_part(b"rows")
    with pytest.raises(ExportsError):
        files.complete(upload, TARGET.key, {"rows": "1"})
    files.discard(upload)
    assert store.objects == {} and store.aborted == []


def test_a_discarded_upload_is_aborted_with_the_checkpoint():
    store = FakeFiles()
    files = AttemptFiles(TASK, store)
    files.write_checkpoint(b"state")
    upload = files.start(TARGET, {})
    upload.upload_part(b"rows")
    files.discard(upload)
    assert store.uploads == {} and store.aborted == [upload.upload_id] and store.checkpoints == {}


def test_staging_is_written_read_and_deleted_per_attempt():
    store = FakeFiles()
    files = AttemptFiles(TASK, store)
    files.stage("plan.json", b"plan")
    other_attempt = AttemptFiles(make_task(attempt=3), store)
    assert files.staged("plan.json") == b"plan" and other_attempt.staged("plan.json") is None
    files.unstage(["plan.json", "partition-0"])
    assert files.staged("plan.json") is None
