"""Signs requests with botocore so brisk's SigV4 can be compared with it byte for byte.

Reads one JSON document from stdin: {"cases": [case, ...]}, where a case is

    kind          "header" (S3SigV4Auth) or "presign" (S3SigV4QueryAuth)
    method        HTTP method
    path          the request path, already percent-encoded (botocore signs S3 paths as given)
    params        [[name, value], ...] decoded query parameters; botocore encodes them itself
    headers       [[name, value], ...] in order; repeated names allowed
    access_key, secret_key, token (null for long-term credentials), region
    timestamp     YYYYMMDDTHHMMSSZ, the instant botocore believes it is
    payload_hash  header signing only: the x-amz-content-sha256 value to sign
    expires       presigning only: X-Amz-Expires in seconds

and writes {"results": [{"signature", "canonical_request", "signed"}, ...]} to stdout, where
"signed" is the Authorization header (header signing) or the presigned URL.
"""

import datetime
import json
import sys

import botocore.auth
from botocore.auth import S3SigV4Auth, S3SigV4QueryAuth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials


class _Capture:
    """Keeps the canonical request botocore computed, for diagnostics."""

    def string_to_sign(self, request, canonical_request):
        self.captured_canonical_request = canonical_request
        return super().string_to_sign(request, canonical_request)


class HeaderSigner(_Capture, S3SigV4Auth):
    def __init__(self, credentials, service, region, payload_hash):
        super().__init__(credentials, service, region)
        self._payload_hash = payload_hash

    def payload(self, request):
        # The payload hash is chosen by the test (a digest or a streaming marker); what is compared is
        # everything botocore does around it.
        return self._payload_hash


class QuerySigner(_Capture, S3SigV4QueryAuth):
    pass


def sign(case):
    now = datetime.datetime.strptime(case["timestamp"], "%Y%m%dT%H%M%SZ")
    botocore.auth.get_current_datetime = lambda *args, **kwargs: now
    creds = Credentials(case["access_key"], case["secret_key"], case.get("token"))
    url = "https://brisk.invalid" + case["path"]
    if case["kind"] == "header":
        request = AWSRequest(method=case["method"], url=url, params=[tuple(p) for p in case["params"]])
        signer = HeaderSigner(creds, "s3", case["region"], case["payload_hash"])
    else:
        request = AWSRequest(method=case["method"], url=url, params={k: v for k, v in case["params"]})
        signer = QuerySigner(creds, "s3", case["region"], expires=case["expires"])
    for name, value in case["headers"]:
        # HTTPMessage.__setitem__ appends, so repeated names are kept in order.
        request.headers[name] = value
    signer.add_auth(request)
    if case["kind"] == "header":
        signed = request.headers["Authorization"]
        signature = signed.rsplit("Signature=", 1)[1]
    else:
        signed = request.url
        signature = signed.rsplit("X-Amz-Signature=", 1)[1]
    return {
        "signature": signature,
        "canonical_request": signer.captured_canonical_request,
        "signed": signed,
    }


def main():
    cases = json.load(sys.stdin)["cases"]
    json.dump({"results": [sign(c) for c in cases]}, sys.stdout)


if __name__ == "__main__":
    main()
