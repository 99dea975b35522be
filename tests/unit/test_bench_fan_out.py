"""The fan-out benchmark case at a tiny size: its partitions' processes, the assembly, and one
CSV (the same sha256) whatever the partition count."""

import gzip
import zipfile

from bench import fan_out


def test_every_format_assembles_and_the_csv_is_the_same_for_every_partition_count(tmp_path, capsys):
    results = fan_out.measure(3_000)

    assert [(result["format"], result["partitions"]) for result in results] == [
        (fmt, partitions) for fmt in fan_out.FORMATS for partitions in fan_out.PARTITIONS
    ]
    fan_out.report(results)
    assert "| xlsx | 4 | 3,000 |" in capsys.readouterr().out


def test_the_assembled_files_open(tmp_path):
    for fmt in ("csv.gz", "xlsx"):
        folder = tmp_path / fmt
        folder.mkdir()
        fan_out.run_once(fmt, 2_500, 2, folder)
        body = (folder / f"file.{fmt}").read_bytes()
        if fmt == "xlsx":
            assert zipfile.ZipFile(folder / "file.xlsx").testzip() is None
        else:
            assert gzip.decompress(body).count(b"\r\n") == 2_501
