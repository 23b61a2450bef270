/*
 * What making fresh anonymous memory resident costs, with no HTTP: map N MiB, optionally mark it
 * MADV_HUGEPAGE (or MADV_NOHUGEPAGE), make it resident (MADV_POPULATE_WRITE, or one write per
 * 4 KiB), then write every byte once (the copy a GET would make). Prints CPU seconds per GiB of each
 * step and how much of the mapping `smaps` shows in 2 MiB pages (folios smaller than 2 MiB are not
 * counted there; see /sys/kernel/mm/transparent_hugepage/hugepages-<size>kB/stats).
 *
 *   cc -O2 -o /tmp/populate_cost bench/populate_cost.c
 *   /tmp/populate_cost MODE MIB     MODE: letters of h (MADV_HUGEPAGE), n (MADV_NOHUGEPAGE),
 *                                   p (MADV_POPULATE_WRITE; without it, one write per 4 KiB),
 *                                   or x for none of them
 *
 * Run each measurement as a fresh process, several times, alternating modes: the first process after
 * memory was freed and reported to a hypervisor pays for it (BENCHMARKS.md, "Huge pages").
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

static double cpu_seconds(void) {
  struct rusage r;
  getrusage(RUSAGE_SELF, &r);
  return r.ru_utime.tv_sec + r.ru_utime.tv_usec / 1e6 + r.ru_stime.tv_sec + r.ru_stime.tv_usec / 1e6;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s MODE MIB\n", argv[0]);
    return 2;
  }
  const char *mode = argv[1];
  size_t len = (size_t)atol(argv[2]) << 20, align = 2 << 20;
  char *raw = mmap(0, len + align, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) {
    perror("mmap");
    return 1;
  }
  char *p = (char *)(((size_t)raw + align - 1) & ~(align - 1));
  double gib = (double)len / (1 << 30), c0 = cpu_seconds();
  if (strchr(mode, 'h') && madvise(p, len, MADV_HUGEPAGE)) perror("MADV_HUGEPAGE");
  if (strchr(mode, 'n') && madvise(p, len, MADV_NOHUGEPAGE)) perror("MADV_NOHUGEPAGE");
  if (strchr(mode, 'p')) {
    if (madvise(p, len, MADV_POPULATE_WRITE)) perror("MADV_POPULATE_WRITE");
  } else {
    for (size_t i = 0; i < len; i += 4096) p[i] = 1;
  }
  double c1 = cpu_seconds();
  memset(p, 2, len);
  double c2 = cpu_seconds();
  long huge_kib = 0;
  char line[256];
  FILE *f = fopen("/proc/self/smaps_rollup", "r");
  while (f && fgets(line, sizeof line, f))
    if (!strncmp(line, "AnonHugePages:", 14)) huge_kib = atol(line + 14);
  if (f) fclose(f);
  printf("%s %zu MiB: resident in %.3f CPU s/GiB, written in %.3f; %ld MiB in 2 MiB pages\n", mode,
         len >> 20, (c1 - c0) / gib, (c2 - c1) / gib, huge_kib >> 10);
  return 0;
}
