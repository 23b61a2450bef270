"""`brisk serve` over HTTPS with independent clients: boto3 (urllib3 and OpenSSL) and the AWS CLI v1,
both trusting the server's self-signed certificate through a CA bundle. Run by tests/it/tls.rs with:
endpoint access_key secret_key ca_bundle workdir. Any failed check raises; the exit status is
non-zero."""

import hashlib
import http.client
import os
import ssl
import subprocess
import sys
import urllib.error
import urllib.request

import boto3
from botocore.config import Config
from botocore.exceptions import SSLError

endpoint, access_key, secret_key, ca_bundle, workdir = sys.argv[1:6]
checks = 0


def check(condition, what):
    global checks
    if not condition:
        raise AssertionError(what)
    checks += 1


def client(verify):
    return boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=access_key,
                        aws_secret_access_key=secret_key, region_name="us-east-1", verify=verify,
                        config=Config(s3={"addressing_style": "path"}, signature_version="s3v4",
                                      retries={"max_attempts": 1}))


check(endpoint.startswith("https://127.0.0.1:"), f"an https endpoint: {endpoint}")
s3 = client(ca_bundle)
s3.create_bucket(Bucket="tls")

# Small and large bodies both ways: a large GET is read from its file and encrypted in user space.
small = b"over TLS" * 100
s3.put_object(Bucket="tls", Key="small", Body=small)
check(s3.get_object(Bucket="tls", Key="small")["Body"].read() == small, "small PUT and GET")
big = os.urandom(12 << 20)
s3.put_object(Bucket="tls", Key="big", Body=big)
got = s3.get_object(Bucket="tls", Key="big")["Body"].read()
check(hashlib.sha256(got).digest() == hashlib.sha256(big).digest(), "12 MiB PUT and GET")
part = s3.get_object(Bucket="tls", Key="big", Range="bytes=5000000-5999999")["Body"].read()
check(part == big[5000000:6000000], "ranged GET")
check(s3.head_object(Bucket="tls", Key="big")["ContentLength"] == len(big), "HEAD")
keys = [o["Key"] for o in s3.list_objects_v2(Bucket="tls")["Contents"]]
check(keys == ["big", "small"], f"ListObjectsV2 {keys}")

# s3transfer: multipart upload and parallel ranged download (10 threads, 10 connections).
src = os.path.join(workdir, "transfer-src.bin")
dst = os.path.join(workdir, "transfer-dst.bin")
with open(src, "wb") as f:
    f.write(os.urandom(20 << 20))
s3.upload_file(src, "tls", "transfer.bin")
s3.download_file("tls", "transfer.bin", dst)
check(open(src, "rb").read() == open(dst, "rb").read(), "upload_file and download_file (multipart)")

# A presigned URL, fetched with the standard library's TLS.
url = s3.generate_presigned_url("get_object", Params={"Bucket": "tls", "Key": "small"}, ExpiresIn=300)
context = ssl.create_default_context(cafile=ca_bundle)
check(urllib.request.urlopen(url, context=context).read() == small, "presigned GET over https")

# Without the CA bundle, the certificate is not trusted.
try:
    client(True).head_bucket(Bucket="tls")
    raise AssertionError("a client without the CA bundle connected")
except SSLError:
    checks += 1

# Plain HTTP to the HTTPS port fails, and the server goes on serving.
plain = "http://" + endpoint.split("://", 1)[1]
try:
    urllib.request.urlopen(plain + "/tls/small", timeout=10).read()
    raise AssertionError("plain HTTP was answered on the TLS port")
except (urllib.error.URLError, http.client.HTTPException, OSError):  # rustls answers with an alert
    checks += 1
check(s3.get_object(Bucket="tls", Key="small")["Body"].read() == small, "still serving after a plain request")

# The AWS CLI v1 with --ca-bundle.
env = dict(os.environ, AWS_ACCESS_KEY_ID=access_key, AWS_SECRET_ACCESS_KEY=secret_key,
           AWS_DEFAULT_REGION="us-east-1", AWS_CONFIG_FILE=os.devnull, AWS_SHARED_CREDENTIALS_FILE=os.devnull)
aws = [sys.executable, "-m", "awscli", "--endpoint-url", endpoint, "--ca-bundle", ca_bundle]
cli_dst = os.path.join(workdir, "cli-dst.bin")
subprocess.run(aws + ["s3", "cp", src, "s3://tls/cli.bin"], env=env, check=True, capture_output=True)
subprocess.run(aws + ["s3", "cp", "s3://tls/cli.bin", cli_dst], env=env, check=True, capture_output=True)
check(open(src, "rb").read() == open(cli_dst, "rb").read(), "aws s3 cp up and down over https")
ls = subprocess.run(aws + ["s3", "ls", "s3://tls/"], env=env, check=True, capture_output=True, text=True).stdout
check("cli.bin" in ls, f"aws s3 ls: {ls!r}")

print(f"ok: {checks} checks")
