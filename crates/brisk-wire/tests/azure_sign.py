"""Signs requests, issues SAS tokens and computes CRC-64s with Microsoft's Python SDK
(azure-storage-blob), so brisk's Azure wire code can be compared with it byte for byte.

Reads one JSON document from stdin:

    {"shared_key": [case, ...], "sas": [case, ...], "crc64": [base64 data, ...], "version": "..."}

A Shared Key case is

    account, key      the storage account and its base64 key
    method            HTTP method
    path              the request path as sent (percent-encoded)
    query             the raw query as sent, without '?' (may be empty)
    headers           [[name, value], ...], names unique regardless of case

and yields {"string_to_sign", "authorization"} from SharedKeyCredentialPolicy.

A SAS case is

    account, key, container, blob (null for a container SAS), permissions,
    start (Unix seconds or null), expiry (Unix seconds), protocol (or null)

and yields {"string_to_sign", "token"} from generate_blob_sas / generate_container_sas, with the
signed version pinned to "version".

A CRC-64 case yields {"crc", "header"}: azure.storage.extensions' CRC-64 of the bytes and the SDK's
x-ms-content-crc64 value of them.

Writes {"shared_key": [...], "sas": [...], "crc64": [...]} to stdout.
"""

import base64
import datetime
import json
import sys

from azure.core.pipeline import PipelineContext, PipelineRequest
from azure.core.pipeline.transport import HttpRequest
from azure.storage.blob import generate_blob_sas, generate_container_sas
import azure.storage.blob._shared_access_signature as blob_sas
from azure.storage.blob._shared.authentication import SharedKeyCredentialPolicy
from azure.storage.blob._shared.validation import calculate_crc64, calculate_crc64_bytes


class CapturingPolicy(SharedKeyCredentialPolicy):
    """Keeps the string to sign the SDK computed."""

    def _add_authorization_header(self, request, string_to_sign):
        self.string_to_sign = string_to_sign
        super()._add_authorization_header(request, string_to_sign)


def shared_key(case):
    query = "?" + case["query"] if case["query"] else ""
    url = "https://brisk.invalid" + case["path"] + query
    request = HttpRequest(case["method"], url, headers=dict(case["headers"]))
    policy = CapturingPolicy(case["account"], case["key"])
    policy.on_request(PipelineRequest(request, PipelineContext(None)))
    return {
        "string_to_sign": policy.string_to_sign,
        "authorization": request.headers["Authorization"],
    }


def utc(seconds):
    if seconds is None:
        return None
    return datetime.datetime.fromtimestamp(seconds, tz=datetime.timezone.utc)


def sas(case):
    captured = []
    options = {
        "account_key": case["key"],
        "permission": case["permissions"],
        "expiry": utc(case["expiry"]),
        "start": utc(case["start"]),
        "protocol": case["protocol"],
        "sts_hook": captured.append,
    }
    if case["blob"] is None:
        token = generate_container_sas(case["account"], case["container"], **options)
    else:
        token = generate_blob_sas(case["account"], case["container"], case["blob"], **options)
    return {"string_to_sign": captured[0], "token": token}


def crc64(data):
    data = base64.b64decode(data)
    return {
        "crc": calculate_crc64(data, 0),
        "header": base64.b64encode(calculate_crc64_bytes(data)).decode(),
    }


def main():
    cases = json.load(sys.stdin)
    # generate_*_sas sign with the newest version the SDK knows; the comparison is for brisk's.
    blob_sas.X_MS_VERSION = cases["version"]
    json.dump(
        {
            "shared_key": [shared_key(case) for case in cases["shared_key"]],
            "sas": [sas(case) for case in cases["sas"]],
            "crc64": [crc64(data) for data in cases["crc64"]],
        },
        sys.stdout,
    )


if __name__ == "__main__":
    main()
