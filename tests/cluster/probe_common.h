/* What the cluster probes (time_probe.c, traffic_probe.c) share: their argument parsing, their
 * usage message, the eth0 byte counters they read, and the input every rank computes.
 * Header-only (static functions): each probe is one translation unit. */
#pragma once

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Prints, on rank 0 only, why an argument was refused and the usage line. Returns 0, the parsers'
 * "refused", so that a parser can `return probe_usage(...)`. */
static int probe_usage(const char* program, const char* usage_line, const char* why,
                       const char* what) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) {
    fprintf(stderr, "%s: %s '%s'\n", program, why, what);
    fprintf(stderr, "usage: %s\n", usage_line);
  }
  return 0;
}

/* A positive byte count with an optional binary K/M/G suffix, the number before the suffix at
 * most `max`; -1 for anything else. */
static long long probe_parse_size(const char* text, long long max) {
  char* end = NULL;
  long long v = strtoll(text, &end, 10);
  if (end == text || v <= 0) return -1;
  int shift = 0;
  if (*end == 'K' || *end == 'k') shift = 10;
  if (*end == 'M' || *end == 'm') shift = 20;
  if (*end == 'G' || *end == 'g') shift = 30;
  if (shift != 0) ++end;
  return *end == '\0' && v <= max ? v << shift : -1;
}

/* A whole number in [lo, hi] and nothing after it; -1 for anything else. */
static int probe_parse_int(const char* text, int lo, int hi) {
  char* end = NULL;
  long v = strtol(text, &end, 10);
  return end != text && *end == '\0' && v >= lo && v <= hi ? (int)v : -1;
}

/* The index of `name` in names[0, n), -1 when it is none of them. */
static int probe_find(const char* name, const char* const* names, int n) {
  for (int i = 0; i < n; ++i)
    if (strcmp(name, names[i]) == 0) return i;
  return -1;
}

/* This network namespace's eth0 counter `name` (tx_bytes, rx_bytes); -1 when it cannot be read
 * (no eth0 here). */
static long long probe_eth0(const char* name) {
  char path[128];
  snprintf(path, sizeof path, "/sys/class/net/eth0/statistics/%s", name);
  FILE* f = fopen(path, "r");
  if (f == NULL) return -1;
  long long v = -1;
  if (fscanf(f, "%lld", &v) != 1) v = -1;
  fclose(f);
  return v;
}

/* Element i of rank r's input: small integers, so that sums are exact in float in any order. */
static float input_value(int r, long long i) {
  return (float)((r + 1) * (int)(i % 7 + 1));
}
