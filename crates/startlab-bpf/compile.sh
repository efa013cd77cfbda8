#!/bin/sh
# Compiles bpf/controller.bpf.c (every port under bpf/cc and bpf/startup), or the source $2 of
# bpf/ (ecn_echo.bpf.c), into the eBPF object $1.
# Used by build.rs and by `make bpf`; needs clang and libbpf's headers (Debian: clang, libbpf-dev).
set -eu
here=$(dirname "$0")
exec "${STARTLAB_CLANG:-clang}" -g -O2 -target bpf -D__TARGET_ARCH_x86 -Wall -Werror \
	-Wno-unused-function -I "$here/bpf" -I /usr/include/bpf \
	-c "$here/bpf/${2:-controller.bpf.c}" -o "$1"
