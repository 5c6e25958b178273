#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""tools/trace/trace_summary.py on traces written here: replays grouped by graph launch, medians,
the busy time, roles, and every way a trace is refused; and scripts/trace-graphs.sh's refusals,
which need no device (ctest: trace.summary; the traced run itself is trace.graphs.cuda)."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SUMMARY = os.path.join(HERE, "..", "..", "tools", "trace", "trace_summary.py")
SCRIPT = os.path.join(HERE, "..", "..", "scripts", "trace-graphs.sh")
HEADER = "# vg kernel trace 1: graph_id correlation_id start_ns end_ns name\n"

# one replay of the step graph: (name, start offset, duration) in ns. The reduction runs inside
# the GEMM (a programmatic launch that waits): its own time is 0. A gap of at least 800 ns
# comes before the norm.
STEP = [
    ("nvjet_sm90_tst_80x64_64x11_2cta_v_bz_TNN", 0, 10000),
    ("_Z19splitKreduce_kernelILi32ELi16EiffEv", 8000, 1000),
    ("_Z9k_rmsnormI13__nv_bfloat16EvPKT_", 13000, 2000),
    ("_Z11k_decode_tcILi64ELi4EEvv", 15000, 8000),
    ("_Z10k_epilogueI13__nv_bfloat16EvPT_", 23000, 1000),
    ("_Z9k_argmaxPKfPi", 24000, 500),
]


def step_trace(replays=12, cut_last=False):
    """A trace's lines: two kernels outside graphs, graph 7 replayed `replays` times (STEP; the
    last replay without its argmax with cut_last), and graph 9 replayed twice."""
    lines = ["0\t1\t100\t200\tk_fill\n", "0\t2\t300\t400\tk_fill\n"]
    t = 1_000_000
    for i in range(replays):
        kernels = STEP[:-1] if cut_last and i == replays - 1 else STEP
        for name, offset, dur in kernels:
            # the GEMM of replay i runs 200 * i ns longer: its median is 11100 ns
            extra = 200 * i if name.startswith("nvjet") else 0
            lines.append(f"7\t{1000 + i}\t{t + offset}\t{t + offset + dur + extra}\t{name}\n")
        t += 100_000
    # a timing graph replayed twice: below --min-replays
    for i in range(2):
        lines.append(f"9\t{5000 + i}\t{t}\t{t + 500}\tnvjet_x\n")
        t += 1000
    return lines


def run(args):
    p = subprocess.run([sys.executable, SUMMARY] + args, capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


class TraceSummary(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.dir.cleanup()

    def write(self, lines, end=True):
        path = os.path.join(self.dir.name, "trace.tsv")
        with open(path, "w") as f:
            f.write(HEADER)
            f.writelines(lines)
            if end:
                f.write("# end dropped=0\n")
        return path

    def test_text(self):
        rc, out, err = run([self.write(step_trace())])
        self.assertEqual(rc, 0, err)
        self.assertEqual(out.splitlines(), [
            "2 kernels outside graphs",
            "graph 7: 12 replays, 6 kernels a replay, span 24.5 us, busy 22.6 us (medians)",
            "       own us  kernel us  kernels  role",
            "         11.1       11.1        1  gemm",
            "          8.0        8.0        1  attention",
            "          2.0        2.0        1  norm",
            "          1.0        1.0        1  k_epilogue",
            "          0.5        0.5        1  argmax",
            "          0.0        1.0        1  gemm_splitk_reduce",
        ])

    def test_json_and_cut_replay(self):
        # the last replay lost its argmax (the trace ended): not counted in the medians
        rc, out, err = run([self.write(step_trace(replays=13, cut_last=True)), "--json"])
        self.assertEqual(rc, 0, err)
        doc = json.loads(out)
        self.assertEqual(doc["eager_kernels"], 2)
        (g,) = doc["graphs"]
        self.assertEqual((g["graph_id"], g["replays"], g["kernels"]), (7, 13, 6))
        self.assertAlmostEqual(g["span_us"], 24.5)
        self.assertAlmostEqual(g["busy_us"], 22.6)
        roles = {r["role"]: r for r in g["roles"]}
        self.assertAlmostEqual(roles["gemm"]["own_us"], 11.1)  # replays 0..11, not 12
        self.assertEqual((g["replays"], g["replays_used"]), (13, 12))
        self.assertAlmostEqual(roles["gemm_splitk_reduce"]["own_us"], 0.0)
        self.assertAlmostEqual(roles["gemm_splitk_reduce"]["kernel_us"], 1.0)
        # the roles' own times add up to the busy time
        self.assertAlmostEqual(sum(r["own_us"] for r in g["roles"]), g["busy_us"])
        self.assertEqual(sorted(roles), ["argmax", "attention", "gemm", "gemm_splitk_reduce",
                                         "k_epilogue", "norm"])

    def test_partial_overlap_and_names(self):
        # B starts inside A and ends after it (a programmatic launch that waited, then ran): A
        # owns its whole 10 us, B the 3 us after A; a namespaced kernel no role names is shown
        # with its namespace, a plain C name as it is
        lines = []
        for i in range(10):
            t = 1_000_000 * (i + 1)
            lines += [f"3\t{i}\t{t}\t{t + 10000}\t_Z11k_gemm_panelILi64EEvv\n",
                      f"3\t{i}\t{t + 4000}\t{t + 13000}\t_ZN10flashinfer6detail9my_kernelIfEEvv\n",
                      f"3\t{i}\t{t + 13000}\t{t + 14000}\tplain_c_kernel\n"]
        rc, out, err = run([self.write(lines), "--json"])
        self.assertEqual(rc, 0, err)
        (g,) = json.loads(out)["graphs"]
        roles = {r["role"]: (r["own_us"], r["kernel_us"]) for r in g["roles"]}
        self.assertEqual(roles, {"gemm": (10.0, 10.0), "flashinfer::detail::my_kernel": (3.0, 9.0),
                                 "plain_c_kernel": (1.0, 1.0)})
        self.assertAlmostEqual(g["busy_us"], 14.0)

    def test_min_replays(self):
        path = self.write(step_trace())
        rc, out, _ = run([path, "--min-replays", "2", "--json"])
        self.assertEqual(rc, 0)
        self.assertEqual([g["graph_id"] for g in json.loads(out)["graphs"]], [7, 9])
        rc, _, err = run([path, "--min-replays", "13"])
        self.assertEqual(rc, 1)
        self.assertIn("no graph replayed at least 13 times (14 graph launches, 2 kernels outside graphs)", err)
        rc, _, err = run([path, "--min-replays", "0"])
        self.assertEqual(rc, 2)
        self.assertIn("--min-replays must be at least 1", err)

    def test_refused(self):
        cases = [
            (["7\t1\t5\t9\n"], True, "trace.tsv:2: expected 5 tab-separated fields, found 4"),
            (["7\tx\t5\t9\tk\n"], True, "trace.tsv:2: graph, correlation, start and end must be integers"),
            (["7\t1\t9\t5\tk\n"], True, "trace.tsv:2: the kernel ends before it starts"),
            (step_trace(), False, "no end line"),
            (step_trace() + ["# end dropped=7\n"], False, "CUPTI dropped 7 records"),
        ]
        for lines, end, message in cases:
            with self.subTest(message=message):
                rc, out, err = run([self.write(lines, end)])
                self.assertEqual(rc, 1)
                self.assertEqual(out, "")
                self.assertIn(message, err)
        # a kernel still running at exit has no timestamps: left out, and said
        rc, out, err = run([self.write(step_trace() + ["7\t1011\t0\t0\tk_late\n"])])
        self.assertEqual(rc, 0, err)
        self.assertIn("1 kernels had no timestamps", err)
        self.assertNotIn("k_late", out)
        rc, _, err = run([os.path.join(self.dir.name, "missing.tsv")])
        self.assertEqual(rc, 1)
        self.assertIn("missing.tsv", err)


class TraceScript(unittest.TestCase):
    """What the script refuses before any kernel runs; a build folder whose library is an empty
    file stands in for a real one (the script only looks for it)."""

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.build = os.path.join(self.dir.name, "build")
        os.makedirs(os.path.join(self.build, "lib"))
        open(os.path.join(self.build, "lib", "libvg_kernel_trace.so"), "w").close()

    def tearDown(self):
        self.dir.cleanup()

    def script(self, args):
        p = subprocess.run(["bash", SCRIPT] + args, capture_output=True, text=True)
        return p.returncode, p.stderr

    def test_command_line(self):
        for args in ([], [self.build], [self.build, "--"], [self.build, "--bogus", "--", "true"],
                     [self.build, "--trace"], [self.build, "--min-replays", "x", "--", "true"],
                     [self.build, "--min-replays", "0", "--", "true"]):
            with self.subTest(args=args):
                rc, err = self.script(args)
                self.assertEqual(rc, 2)
                self.assertIn("usage: trace-graphs.sh", err)

    def test_no_library(self):
        rc, err = self.script([self.dir.name, "--", "true"])
        self.assertEqual(rc, 1)
        self.assertIn("libvg_kernel_trace.so not found", err)

    def test_existing_trace_kept(self):
        kept = os.path.join(self.dir.name, "kept.tsv")
        with open(kept, "w") as f:
            f.write("mine\n")
        marker = os.path.join(self.dir.name, "ran")
        rc, err = self.script([self.build, "--trace", kept, "--", "touch", marker])
        self.assertEqual(rc, 2)
        self.assertIn("never overwrites", err)
        self.assertFalse(os.path.exists(marker), "the command ran although the trace was refused")
        with open(kept) as f:
            self.assertEqual(f.read(), "mine\n")

    def test_command_output_on_stderr(self):
        # the summary alone is on stdout; what the command prints goes to stderr
        p = subprocess.run(["bash", SCRIPT, self.build, "--", "echo", "from the command"],
                           capture_output=True, text=True)
        self.assertEqual(p.returncode, 1)  # it wrote no trace
        self.assertEqual(p.stdout, "")
        self.assertIn("from the command", p.stderr)

    def test_summary_of_what_the_command_wrote(self):
        # a stand-in for a traced program: it changes folder, then writes a whole trace where
        # VG_KERNEL_TRACE says, and notes the library path it was given
        fixture = os.path.join(self.dir.name, "fixture.tsv")
        with open(fixture, "w") as f:
            f.write(HEADER)
            f.writelines(step_trace())
            f.write("# end dropped=0\n")
        seen = os.path.join(self.dir.name, "seen")
        fake = ('cd / && cat "$0" > "$VG_KERNEL_TRACE" && echo "$CUDA_INJECTION64_PATH" > "$1" '
                '&& echo printed by the command')
        work = os.path.join(self.dir.name, "work")
        os.makedirs(work)
        p = subprocess.run(["bash", SCRIPT, os.path.relpath(self.build, work), "--trace", "kept.tsv",
                            "--json", "--", "sh", "-c", fake, fixture, seen],
                           capture_output=True, text=True, cwd=work)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual([g["graph_id"] for g in json.loads(p.stdout)["graphs"]], [7])
        self.assertIn("printed by the command", p.stderr)
        with open(os.path.join(work, "kept.tsv")) as kept, open(fixture) as f:  # a relative --trace
            self.assertEqual(kept.read(), f.read())
        with open(seen) as f:
            self.assertEqual(f.read().strip(), os.path.join(self.build, "lib", "libvg_kernel_trace.so"))
        # no summary options: the text summary
        p = subprocess.run(["bash", SCRIPT, self.build, "--", "sh", "-c", fake, fixture, seen],
                           capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("graph 7: 12 replays", p.stdout)

    def test_trace_folder_missing(self):
        rc, err = self.script([self.build, "--trace", os.path.join(self.dir.name, "no", "t.tsv"),
                               "--", "true"])
        self.assertEqual(rc, 2)
        self.assertIn("is not a folder", err)

    def test_command_status(self):
        rc, err = self.script([self.build, "--", "sh", "-c", "exit 3"])
        self.assertEqual(rc, 3)
        self.assertIn("the command exited 3", err)
        # a command that ran no CUDA leaves no trace: said, and not success
        rc, err = self.script([self.build, "--", "true"])
        self.assertEqual(rc, 1)
        self.assertIn("no trace was written", err)


if __name__ == "__main__":
    unittest.main()
