"""Objects uploaded by another client with a COMPOSITE checksum (boto3's multipart upload with
CRC32, parts of equal size): brisk's download checks them part by part, against brisk
serve and MinIO alike. The brisk CLI's `--debug` events say which check ran; the Python package's
`download` is the same Rust path and must produce the exact bytes."""

from __future__ import annotations

import os
import subprocess

import boto3
import pytest
from botocore.config import Config

from conftest import ACCESS_KEY, SECRET_KEY, brisk_binary

MIB = 1 << 20


def boto3_client(server):
    return boto3.client("s3", endpoint_url=server.endpoint, region_name="us-east-1",
                        aws_access_key_id=ACCESS_KEY, aws_secret_access_key=SECRET_KEY,
                        config=Config(s3={"addressing_style": "path"}))


# CRC32C would need botocore[crt]; CRC32 goes through the same code in brisk.
@pytest.mark.parametrize("algorithm", ["CRC32"])
def test_composite_checksums_are_checked_part_by_part(server, client, bucket, tmp_path, algorithm):
    s3 = boto3_client(server)
    parts = [os.urandom(5 * MIB), os.urandom(5 * MIB), os.urandom(MIB + 7)]
    key = f"composite-{algorithm}"
    upload = s3.create_multipart_upload(Bucket=bucket, Key=key, ChecksumAlgorithm=algorithm,
                                        ChecksumType="COMPOSITE")
    done = []
    for number, body in enumerate(parts, start=1):
        r = s3.upload_part(Bucket=bucket, Key=key, UploadId=upload["UploadId"], PartNumber=number,
                           Body=body, ChecksumAlgorithm=algorithm)
        done.append({"PartNumber": number, "ETag": r["ETag"], f"Checksum{algorithm}": r[f"Checksum{algorithm}"]})
    s3.complete_multipart_upload(Bucket=bucket, Key=key, UploadId=upload["UploadId"],
                                 MultipartUpload={"Parts": done})
    head = s3.head_object(Bucket=bucket, Key=key, ChecksumMode="ENABLED")
    assert head[f"Checksum{algorithm}"].endswith("-3"), head

    whole = b"".join(parts)
    target = tmp_path / "via-python"
    assert client.download(bucket, key, target) == len(whole)
    assert target.read_bytes() == whole

    cli_target = tmp_path / "via-cli"
    env = dict(os.environ, AWS_ACCESS_KEY_ID=ACCESS_KEY, AWS_SECRET_ACCESS_KEY=SECRET_KEY,
               AWS_REGION="us-east-1", AWS_CONFIG_FILE="/dev/null", AWS_SHARED_CREDENTIALS_FILE="/dev/null")
    env.pop("RUST_LOG", None)
    out = subprocess.run([str(brisk_binary()), "--endpoint-url", server.endpoint, "--debug", "cp",
                          f"s3://{bucket}/{key}", str(cli_target)],
                         env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "checked against the object's composite checksum, part by part" in out.stderr, out.stderr
    assert cli_target.read_bytes() == whole
