# SPDX-License-Identifier: Apache-2.0
# ctest: include/vg/dlpack/dlpack.h is upstream DLPack's include/dlpack/dlpack.h of tag v1.1
# (github.com/dmlc/dlpack), byte for byte, below the SPDX line vg adds as its first line. Debian 12
# ships DLPack 0.6 (no DLManagedTensorVersioned), so vg carries this copy; a change to it must be a
# deliberate update of the pin.
#   cmake -DHEADER=<path> -P check_dlpack_header.cmake
cmake_minimum_required(VERSION 3.25)
set(pinned 2540410479f23d62d34c02cb5fce54e4cf165fb315033e9cd948452a65887208)
file(READ ${HEADER} text)
string(FIND "${text}" "\n" eol)
if(eol LESS 0)
  message(FATAL_ERROR "${HEADER}: empty or a single line")
endif()
string(SUBSTRING "${text}" 0 ${eol} first)
if(NOT first STREQUAL "/* SPDX-License-Identifier: Apache-2.0 */")
  message(FATAL_ERROR "${HEADER}: the first line is not vg's SPDX line: ${first}")
endif()
math(EXPR start "${eol} + 1")
string(SUBSTRING "${text}" ${start} -1 upstream)
string(SHA256 sum "${upstream}")
if(NOT sum STREQUAL pinned)
  message(FATAL_ERROR "${HEADER}: SHA-256 ${sum} below the SPDX line, want ${pinned} (DLPack v1.1)")
endif()
message("${HEADER}: DLPack v1.1 as pinned")
