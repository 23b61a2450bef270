"""What the bench scripts share: sizes, ports, what /proc says of a process, the host line, the
result files' TSV, and the peer clients (boto3, awscrt, obstore) as the drivers set them up.

Every script in bench/ runs as `PYTHON bench/NAME.py ...`, so this folder is on `sys.path` and
`import benchlib` finds this file. It imports nothing but the standard library at load time (the
peers are imported inside the functions that build them), so that every venv a driver runs in
(.bench-venv, .bench-venv-s3fs, the test venv) can load it.
"""

import json
import os
import socket

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KIB, MIB, GIB = 1 << 10, 1 << 20, 1 << 30
# The credentials and region the benchmarks start their servers with (compare.Server).
ACCESS_KEY, SECRET_KEY, REGION = "comparebenchkey", "comparebenchsecret", "us-east-1"
CLK_TCK = os.sysconf("SC_CLK_TCK")


# ---------------------------------------------------------------------------------------------------
# Sizes and ports.


def parse_size(text):
    """`256KiB`, `1.5GiB`, `4096`: bytes."""
    for unit, factor in (("KiB", KIB), ("MiB", MIB), ("GiB", GIB)):
        if text.endswith(unit):
            return int(float(text[: -len(unit)]) * factor)
    return int(text)


def size_label(size):
    """`1 GiB` for whole GiB, else `N MiB` from 1 MiB up, else `N KiB`."""
    if size >= GIB and size % GIB == 0:
        return f"{size // GIB} GiB"
    if size >= MIB:
        return f"{size // MIB} MiB"
    return f"{size // KIB} KiB"


def free_port():
    """A TCP port of 127.0.0.1 that nothing listens on (the kernel's pick)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ---------------------------------------------------------------------------------------------------
# What the kernel says of a process and of the host.


def process_cpu_seconds(pid):
    """User + system CPU seconds of process `pid` (`/proc/<pid>/stat`)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def status_kib(field, pid="self"):
    """A kB field of `/proc/<pid>/status` (`VmRSS`, `VmHWM`, ...), 0 if absent."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def process_rss_kib(pid):
    """Resident set of process `pid` in KiB (`VmRSS`)."""
    return status_kib("VmRSS", pid)


def host_line():
    """The CPU model, CPU count, transparent huge pages setting and kernel, for a result's header."""
    model = "unknown CPU"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    thp = open("/sys/kernel/mm/transparent_hugepage/enabled").read().strip()
    return f"{model}, {os.cpu_count()} CPUs, THP {thp}, kernel {os.uname().release}"


# ---------------------------------------------------------------------------------------------------
# Result files: a `# {meta json}` line, a header of the fields, one TSV line per row.


def tsv_line(row, fields):
    """One row as a TSV line of `fields`."""
    return "\t".join(str(row.get(k, "")) for k in fields) + "\n"


def write_tsv(path, meta, rows, fields):
    """The raw rows: a `# {meta json}` line, a header of `fields`, one line per row."""
    with open(path, "w") as f:
        f.write(f"# {json.dumps(meta)}\n")
        f.write("\t".join(fields) + "\n")
        for row in rows:
            f.write(tsv_line(row, fields))


def read_tsv(path, ints=(), floats=()):
    """What write_tsv wrote: (meta, rows), the `ints` and `floats` columns converted (None if empty)."""
    with open(path) as f:
        meta = json.loads(f.readline()[2:])
        header = f.readline().rstrip("\n").split("\t")
        rows = []
        for line in f:
            row = dict(zip(header, line.rstrip("\n").split("\t")))
            for k in ints:
                row[k] = int(row[k]) if row.get(k) else None
            for k in floats:
                row[k] = float(row[k]) if row.get(k) else None
            rows.append(row)
    return meta, rows


def write_results(stem, meta, rows, fields, text, partial=None, with_json=True):
    """A run's files: STEM.tsv (and STEM.json unless `with_json` is false) with the rows, STEM.md
    with `text`, which is printed too; `partial` (the STEM.partial.tsv written as the run went) is
    closed and removed."""
    if partial is not None:
        partial.close()
        os.unlink(stem + ".partial.tsv")
    write_tsv(stem + ".tsv", meta, rows, fields)
    if with_json:
        with open(stem + ".json", "w") as f:
            json.dump({"meta": meta, "rows": rows}, f, indent=1)
    with open(stem + ".md", "w") as f:
        f.write(text)
    print(text)


# ---------------------------------------------------------------------------------------------------
# The peers, set up as every driver sets them up: path-style addressing (a server on 127.0.0.1), the
# benchmarks' credentials, each library's defaults otherwise.


def boto3_client(endpoint, max_pool_connections=None):
    """boto3's S3 client; `max_pool_connections` for drivers that run that many threads on it
    (boto3's default is 10)."""
    import boto3
    from botocore.config import Config

    extra = {} if max_pool_connections is None else {"max_pool_connections": max_pool_connections}
    return boto3.client("s3", endpoint_url=endpoint, config=Config(s3={"addressing_style": "path"}, **extra))


def awscrt_client(endpoint):
    """awscrt's `S3Client` with its defaults (throughput target, part size), signing with the
    benchmarks' static credentials; over HTTPS it trusts `AWS_CA_BUNDLE`."""
    from awscrt import auth, io, s3

    elg = io.EventLoopGroup()
    bootstrap = io.ClientBootstrap(elg, io.DefaultHostResolver(elg))
    credentials = auth.AwsCredentialsProvider.new_static(ACCESS_KEY, SECRET_KEY)
    tls = {"tls_mode": s3.S3RequestTlsMode.DISABLED}
    if endpoint.startswith("https://"):
        options = io.TlsContextOptions()
        options.override_default_trust_store_from_path(ca_filepath=os.environ["AWS_CA_BUNDLE"])
        tls = {"tls_mode": s3.S3RequestTlsMode.ENABLED,
               "tls_connection_options": io.ClientTlsContext(options).new_connection_options()}
    return s3.S3Client(
        bootstrap=bootstrap,
        region=REGION,
        signing_config=s3.create_default_s3_signing_config(region=REGION, credential_provider=credentials),
        **tls,
    )


def obstore_store(endpoint, bucket, timeout_s=None):
    """obstore's `S3Store` for `bucket`. obstore's default request timeout is 30 s, which a slow
    stream of a large object may outlast: the drivers that move whole objects pass `timeout_s`.
    Over HTTPS it trusts `AWS_CA_BUNDLE`."""
    from obstore.store import S3Store

    options = {"allow_http": True}
    if timeout_s is not None:
        options["timeout"] = f"{timeout_s}s"
    if endpoint.startswith("https://"):
        with open(os.environ["AWS_CA_BUNDLE"]) as f:
            options["root_certificate"] = f.read()
    return S3Store(bucket, endpoint=endpoint, region=REGION, access_key_id=ACCESS_KEY,
                   secret_access_key=SECRET_KEY, virtual_hosted_style_request=False, client_options=options)


def brisk_client(endpoint, **kwargs):
    """brisk's Python client with the benchmarks' credentials, path-style; `kwargs` go to
    `brisk.Client` (`max_memory=`, ...)."""
    import brisk

    return brisk.Client(endpoint, addressing_style="path", access_key_id=ACCESS_KEY,
                        secret_access_key=SECRET_KEY, region=REGION, **kwargs)

