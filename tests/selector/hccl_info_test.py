#!/usr/bin/env python3
"""hccl_info end to end: decision tables for a server layout and a 3-level rank table, forced
algorithms and their attribution, configuration errors, the algorithm list and the tuning dump."""
import json
import os
import subprocess
import sys

exe, rank_table = sys.argv[1], sys.argv[2]
env = {k: v for k, v in os.environ.items() if not k.startswith(("HCCL_", "COLL_HCCL_"))}


def run(*args, extra_env=None, ok=True):
    e = dict(env, **(extra_env or {}))
    p = subprocess.run([exe, *args], capture_output=True, text=True, env=e, timeout=120)
    if ok and p.returncode != 0:
        sys.exit(f"hccl_info {' '.join(args)} failed ({p.returncode}):\n{p.stderr}")
    return p


def check(cond, what):
    if not cond:
        sys.exit("FAIL: " + what)


# 4 servers x 8 ranks: two levels, every row decided, level0 inside a server.
rows = json.loads(run("table", "--shape", "4x8", "--json").stdout)
check(len(rows) == 3 * 13, f"expected 39 rows (3 collectives x 4 B..64 MiB by 4), got {len(rows)}")
for r in rows:
    check(r["error"] == "", f"declined: {r}")
    check([lv["level"] for lv in r["levels"]] == [0, 1], f"levels of {r['collective']}: {r['levels']}")
    check(r["predicted_s"] > 0, "predicted time")
small = [r for r in rows if r["collective"] == "allreduce"][0]
check(small["levels"][1]["algorithm"] in ("H-D_R", "NHR", "NB"), f"small allreduce: {small}")

# Every other collective on 4 servers x 8 ranks: decided at every level, the forced per-op keys
# honoured, pipeline for alltoall falling back to pairwise in HCCL's order.
others = "broadcast,reduce,scatter,gather,alltoall,alltoallv,barrier,scan,exscan"
rows = json.loads(run("table", "--shape", "4x8", "--json", "--coll", others).stdout)
check(len(rows) == 9 * 13, f"expected 117 rows (9 collectives x 13 sizes), got {len(rows)}")
for r in rows:
    check(r["error"] == "", f"declined: {r}")
    # A large alltoall may run flat: the per-level plan's local packs (charged since the model
    # counts them) cost more there than the intra-server exchange saves.
    # An alltoallv always runs flat: its counts are rank-local (plan_levels.cpp says why).
    flat = (r["collective"] == "alltoall" and len(r["levels"]) == 1 and
            "flat over all ranks" in r["levels"][0]["detail"]) or (
            r["collective"] == "alltoallv" and len(r["levels"]) == 1 and
            "alltoallv counts are rank-local" in r["levels"][0]["detail"])
    check(flat or [lv["level"] for lv in r["levels"]] == [0, 1],
          f"levels of {r['collective']}: {r['levels']}")
# alltoallv is decided without sizes (its counts are rank-local): no time is claimed for it.
for r in rows:
    a2av = r["collective"] == "alltoallv"
    check(r["priced"] == (not a2av), f"priced: {r}")
    check(not a2av or ("no time predicted" in r["summary"] and " us" not in r["summary"]),
          f"alltoallv's decision prices nothing: {r['summary']}")
text = run("table", "--shape", "4x8", "--coll", "alltoallv", "--min", "4K", "--max", "4K").stdout
check(any(l.startswith("alltoallv") and l.rstrip().endswith("rank-local")
          for l in text.splitlines()), "alltoallv's predicted column says rank-local:\n" + text)
# The text table puts each choice under its own level's column, found from the header: the flat
# alltoallv (one level1 choice over every rank) leaves level0 "-"; a two-level allreduce fills
# both. The columns are cut at the header's offsets, so a shift by a column shows.
text = run("table", "--shape", "4x8", "--coll", "alltoallv,allreduce", "--min", "4K",
           "--max", "4K").stdout
lines = text.splitlines()
header = next(l for l in lines if l.startswith("collective"))
at0, at1, atp = header.index("level0 (8)"), header.index("level1 (4)"), header.index("predicted")


def columns(prefix):
    line = next(l for l in lines if l.startswith(prefix))
    return line[at0:at1].strip(), line[at1:atp].strip().split()[0]


check(columns("alltoallv") == ("-", "pairwise"), f"flat alltoallv under level1:\n{text}")
l0, l1 = columns("allreduce")
want = [lv["algorithm"] for lv in
        json.loads(run("table", "--shape", "4x8", "--json", "--coll", "allreduce", "--min", "4K",
                       "--max", "4K").stdout)[0]["levels"]]
check([l0, l1] == want, f"allreduce columns {l0}, {l1} are its levels {want}:\n{text}")
small_a2a = [r for r in rows if r["collective"] == "alltoall"][0]
check([lv["level"] for lv in small_a2a["levels"]] == [0, 1] and
      "plus local copies" in small_a2a["levels"][1]["detail"],
      f"small alltoall over levels, its copies charged: {small_a2a['levels']}")
rows = json.loads(run("table", "--shape", "4x1", "--json", "--coll", "alltoall,gather,scan",
                      extra_env={"HCCL_ALGO": "alltoall=level1:pipeline/gather=level1:NB/"
                                              "scan=level1:H-D_R"}).stdout)
by = {}
for r in rows:
    by.setdefault(r["collective"], []).append(r["levels"][0])
check(all(lv["algorithm"] == "pairwise" and lv["reason"] == "fallback" for lv in by["alltoall"]),
      f"alltoall pipeline -> pairwise: {by['alltoall'][0]}")
check(all(lv["algorithm"] == "NB" and lv["reason"] == "forced" for lv in by["gather"]),
      f"gather forced NB: {by['gather'][0]}")
check(all(lv["algorithm"] == "H-D_R" and lv["reason"] == "forced" for lv in by["scan"]),
      f"scan forced H-D_R: {by['scan'][0]}")

# The 3-level rank table: level0, level1 and level2 all present.
text = run("table", "--rank-table", rank_table).stdout
check("2 supernodes x 2 servers x 8 ranks" in text, "rank table layout named:\n" + text)
check("level0 (8)" in text and "level1 (2)" in text and "level2 (2)" in text, "three levels:\n" + text)

# Forcing through the environment, overridden by an MCA value, overridden by an info key.
rows = json.loads(run("table", "--shape", "6x1", "--json", "--coll", "allreduce",
                      extra_env={"HCCL_ALGO": "level0:NA;level1:ring"}).stdout)
check(all(r["levels"][0]["algorithm"] == "ring" and r["levels"][0]["reason"] == "forced"
          and "env HCCL_ALGO" in r["levels"][0]["detail"] for r in rows), "env forcing")
rows = json.loads(run("table", "--shape", "6x1", "--json", "--coll", "allreduce",
                      "--mca", "coll_hccl_algorithm=level1:NHR",
                      extra_env={"HCCL_ALGO": "level0:NA;level1:ring"}).stdout)
check(all(r["levels"][0]["algorithm"] == "NHR" for r in rows), "MCA beats env")
rows = json.loads(run("table", "--shape", "6x1", "--json", "--coll", "allreduce",
                      "--mca", "coll_hccl_algorithm=level1:NHR",
                      "--info", "hccl_algo=level1:H-D_R").stdout)
check(all(r["levels"][0]["algorithm"] == "H-D_R" and "info key" in r["levels"][0]["detail"]
          for r in rows), "info key beats MCA")

# A malformed HCCL_ALGO: exit 2 and a message naming the token, the source and valid values.
p = run("config", extra_env={"HCCL_ALGO": "level1:rign"}, ok=False)
check(p.returncode == 2, f"exit code {p.returncode}")
for needle in ('"rign"', "env HCCL_ALGO", "valid: ring"):
    check(needle in p.stderr, f"{needle!r} in: {p.stderr}")

# Listing and tuning dump.
algs = {a["name"]: a for a in json.loads(run("algorithms", "--json").stdout)}
check("allreduce (rank order)" in algs["H-D_R"]["collectives"], "RHD allreduce is rank-ordered")
check("level0" in algs["fullmesh"]["hccl_levels"], "mesh is level0")
tuning = json.loads(run("tuning").stdout)
check(tuning["version"] == 1 and "level1" in tuning["levels"], "tuning document")
# HCCL's default rules are part of it, and a tuning file's rows replace them.
check(any(r["algorithm"] == "pipeline" and r["level"] == 1 for r in tuning["hccl_rules"]),
      f"hccl_rules rows in the tuning document: {tuning.get('hccl_rules')}")
rules_file = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"hccl_info_rules_{os.getpid()}.json")
with open(rules_file, "w") as f:
    json.dump({"hccl_rules": [{"level": 1, "algorithm": "NB"}]}, f)
try:
    check(json.loads(run("tuning", "--tuning", rules_file).stdout)["hccl_rules"]
          == [{"level": 1, "algorithm": "NB"}], "a tuning file replaces the rows")
    rows = json.loads(run("table", "--shape", "4x1", "--json", "--coll", "allreduce", "--tuning",
                          rules_file, extra_env={"COLL_HCCL_SELECTION": "hccl_rules"}).stdout)
    check(all(r["levels"][0]["algorithm"] == "NB" and r["levels"][0]["reason"] == "hccl_rules"
              for r in rows), f"hccl_rules selection follows the file: {rows[0]}")
finally:
    os.remove(rules_file)
# The previous call as an input (--after-bcast): a Barrier right after a Bcast at 2-8 ranks on the
# shared-memory link is gathered at the Bcast's root by its sequence rule, and said so; after
# anything else, on UCX's tagged messages or at nine ranks it is not.
def barrier_rows(shape, *more):
    return json.loads(run("table", "--shape", shape, "--coll", "barrier", "--min", "8", "--max",
                          "8", "--json", *more).stdout)
after = barrier_rows("1x2", "--level0-link", "shm", "--after-bcast", "1")[0]
check(after["after_broadcast_from"] == 1 and after["levels"][0]["algorithm"] == "gathered" and
      after["levels"][0]["reason"] == "sequence rule" and
      "after a broadcast from rank 1" in after["summary"], f"gathered after a bcast: {after}")
after = barrier_rows("1x4", "--level0-link", "shm", "--after-bcast", "3")[0]
check(after["levels"][0]["algorithm"] == "gathered" and
      "after a broadcast from rank 3" in after["summary"], f"gathered at 1x4: {after}")
for shape, more in (("1x2", ["--level0-link", "shm"]),
                    ("1x2", ["--level0-link", "tagged", "--after-bcast", "0"]),
                    ("1x9", ["--level0-link", "shm", "--after-bcast", "0"])):
    r = barrier_rows(shape, *more)[0]
    check(r["levels"][0]["algorithm"] != "gathered", f"{shape} {more}: {r}")
text = run("table", "--shape", "1x2", "--level0-link", "shm", "--coll", "barrier", "--min", "8",
           "--max", "8", "--after-bcast", "0", "--why").stdout
check("gathered+" in text and "level0 gathered (sequence rule: after a broadcast from rank 0" in text,
      "the table marks and explains the sequence rule:\n" + text)
check(run("table", "--shape", "1x2", "--coll", "barrier", "--after-bcast", "2", ok=False).returncode
      != 0, "--after-bcast outside the ranks is refused")
check("gathered" in run("algorithms").stdout, "hccl_info algorithms lists gathered")

print("PASS hccl_info")
