"""Microsoft's Azure Blob SDK (azure-storage-blob) against blobs brisk wrote, and the other way round.

Run by tests/it/azure.rs, in steps, each a subcommand:

  check-brisk-wrote CONN CONTAINER DIR NAME...  every blob NAME equals DIR/NAME byte for byte, read
      with the SDK's transactional MD5 validation; blobs brisk put in one Put Blob carry the
      MD5 of their bytes.
  write CONN CONTAINER DIR   the SDK writes `sdk-single` (one upload_blob) and `sdk-blocks`
      (three stage_block and a commit_block_list), and their bytes to DIR for brisk to compare.
  make-public CONN CONTAINER  the container's blobs become readable anonymously (public access "blob").
  read-url URL FILE          the SDK reads a URL (brisk's presigned SAS URL) with no credentials,
      and the bytes equal FILE.
"""

import hashlib
import os
import sys

from azure.storage.blob import BlobBlock, BlobClient, BlobServiceClient

MIB = 1024 * 1024


def pattern(n, seed):
    return bytes(((i * 2654435761) >> 8 ^ seed) & 0xFF for i in range(n))


def check_brisk_wrote(conn, container, directory, names):
    service = BlobServiceClient.from_connection_string(conn)
    for name in names:
        expected = open(os.path.join(directory, name), "rb").read()
        blob = service.get_blob_client(container, name)
        props = blob.get_blob_properties()
        assert props.size == len(expected), (name, props.size, len(expected))
        # Transactional MD5 on every range the SDK reads (4 MiB each).
        got = blob.download_blob(validate_content=True, max_concurrency=2).readall()
        assert got == expected, f"{name}: the SDK read different bytes"
        md5 = props.content_settings.content_md5
        if props.blob_type == "BlockBlob" and md5 is not None:
            assert bytes(md5) == hashlib.md5(expected).digest(), f"{name}: stored MD5 differs"
        print(f"ok: {name} {len(expected)} bytes, md5 {'stored' if md5 else 'none'}")


def write(conn, container, directory):
    service = BlobServiceClient.from_connection_string(conn)
    single = pattern(3 * MIB + 5, 1)
    service.get_blob_client(container, "sdk-single").upload_blob(single, overwrite=True)
    blocks = [pattern(MIB, 2), pattern(MIB, 3), pattern(77, 4)]
    client = service.get_blob_client(container, "sdk-blocks")
    ids = []
    for i, data in enumerate(blocks):
        block_id = f"sdk-{i:04d}"
        client.stage_block(block_id, data, validate_content=True)
        ids.append(BlobBlock(block_id=block_id))
    client.commit_block_list(ids)
    open(os.path.join(directory, "sdk-single"), "wb").write(single)
    open(os.path.join(directory, "sdk-blocks"), "wb").write(b"".join(blocks))
    print("ok: wrote sdk-single and sdk-blocks")


def make_public(conn, container):
    service = BlobServiceClient.from_connection_string(conn)
    service.get_container_client(container).set_container_access_policy(
        signed_identifiers={}, public_access="blob")
    print(f"ok: {container} is public")


def read_url(url, path):
    got = BlobClient.from_blob_url(url).download_blob().readall()
    assert got == open(path, "rb").read(), "the presigned URL read different bytes"
    print(f"ok: read {len(got)} bytes through the presigned URL")


if __name__ == "__main__":
    step, args = sys.argv[1], sys.argv[2:]
    if step == "check-brisk-wrote":
        check_brisk_wrote(args[0], args[1], args[2], args[3:])
    elif step == "write":
        write(*args)
    elif step == "make-public":
        make_public(*args)
    elif step == "read-url":
        read_url(*args)
    else:
        sys.exit(f"unknown step {step}")
