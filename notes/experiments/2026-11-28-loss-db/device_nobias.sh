#!/bin/bash
# What the bias-activation kernel costs the own-kernel step: probe_step at a4511a7
# against the same headers with that kernel left out of the own step (wrong
# activations; timing only), in turns.
B=build/h90/exp
for r in 1 2; do
  for cfg in "f16 512 3000" "f16 2048 32" "f16 2048 128" "f16 512 512"; do
    set -- $cfg
    echo "with $cfg $($B/probe_step_xent $1 $2 $3 | tail -1)"
    echo "without $cfg $($B/probe_step_nobias $1 $2 $3 | tail -1)"
  done
done
