/* SPDX-License-Identifier: Apache-2.0 */
/* vg lm: the language model's subcommands: generate (lm_generate.c), bench (lm_bench.c). */
#include <stdio.h>
#include <string.h>

#include "vg_cli.h"

static const char k_help[] =
    "usage: vg lm generate --model DIR (--prompt-ids 1,2,3 | --input CASE.input.safetensors)\n"
    "                      --max-new-tokens N [--output OUT.safetensors] [...]\n"
    "       vg lm bench --config NAME|CONFIG.json [--batch 1,16,64] [--prompt N] [--new N] [...]\n"
    "\n"
    "  generate  greedy decoding of every prompt as one batch on the graph runner, with a paged\n"
    "            KV cache (vg lm generate --help)\n"
    "  bench     decode latency with synthetic weights, eager against graphs, per batch size\n"
    "            (vg lm bench --help)\n";

int vg_cmd_lm(int argc, char **argv)
{
    if (argc < 2 || vg_cli_is_help(argv[1])) {
        fputs(k_help, argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (strcmp(argv[1], "generate") == 0) return vg_cmd_lm_generate(argc, argv);
    if (strcmp(argv[1], "bench") == 0) return vg_cmd_lm_bench(argc, argv);
    return vg_cli_usage("lm", "unknown subcommand '%s'; the subcommands are generate and bench", argv[1]);
}
