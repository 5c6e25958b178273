/* SPDX-License-Identifier: Apache-2.0 */
/* vg vit: the vision encoder's subcommands, encode (vit_encode.c) and bench (cmd_vit_bench.c). */
#include <stdio.h>
#include <string.h>

#include "vg_cli.h"

static const char k_help[] =
    "usage: vg vit encode --model DIR --input IN.safetensors --output OUT.safetensors [...]\n"
    "       vg vit bench [--config NAME | --model DIR] [--sizes 224,448,896] [...]\n"
    "\n"
    "  encode   run a Qwen2.5-VL or Qwen3-VL vision encoder on a safetensors input, write the\n"
    "           embeddings (and deepstack features), and compare them with a reference file\n"
    "           (vg vit encode --help)\n"
    "  bench    latency of the encoder, eager against graph, per image size (vg vit bench --help)\n";

int vg_cmd_vit(int argc, char **argv)
{
    if (argc < 2 || vg_cli_is_help(argv[1])) {
        fputs(k_help, argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (strcmp(argv[1], "bench") == 0) return vg_cmd_vit_bench(argc, argv);
    if (strcmp(argv[1], "encode") == 0) return vg_cmd_vit_encode(argc, argv);
    return vg_cli_usage("vit", "unknown subcommand '%s'; the subcommands are encode and bench", argv[1]);
}
