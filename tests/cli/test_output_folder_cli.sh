#!/usr/bin/env bash
# The output folder of train, sweep and demo: one that holds another run (a checkpoint, results)
# is refused in one line naming the folder and the ways out, and left as it was; `--force`
# replaces that run (the files the new run writes replace the old ones, the old run's others are
# removed when it ends; files that are not a run's are kept); `train --resume` continues in its
# own folder; an absent, empty or unrelated folder is fine; eval writes beside a checkpoint.
set -u
bin="$1"
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"

run=(--pe learned --d-model 16 --heads 2 --layers 1 --train-len 3 --alphabet 4 --batch 4
     --micro-batch 2 --steps 2 --warmup 1 --quiet)
grid=(--pe learned --seeds 1 --task copy --train-len 3 --d-model 16 --heads 2 --alphabet 4
      --batch 4 --micro-batch 2 --steps 2 --warmup 1 --samples 4 --eval-max 4 --quiet --threads 1)
demo=(--quick --seeds 1 --steps 2 --randomized-steps 2 --extension-steps 2
      --rope-extension-steps 2 --samples 2 --eval-max 4 --threads 2)

# train: absent, then the same folder again.
expect 0 "train into an absent folder" -- train "${run[@]}" --out "$tmp/r"
cp "$tmp/r/checkpoint.safetensors" "$tmp/first.safetensors"
expect 1 "train into a folder holding a run" -- train "${run[@]}" --seed 2 --out "$tmp/r"
one_line "the refusal"
contains err "train: the output folder '$tmp/r' holds another run (checkpoint.safetensors)" \
  "the refusal names the folder and what it holds"
contains err "pass --force to replace it, or --resume $tmp/r to continue it; nothing was done" \
  "the refusal names the ways out"
cmp -s "$tmp/r/checkpoint.safetensors" "$tmp/first.safetensors" || fail "a refused train wrote"
# eval writes its results beside the checkpoint it scores; --resume continues in the folder.
expect 0 "eval beside the checkpoint" -- eval --checkpoint "$tmp/r" --lengths 1:3 --samples 4 \
  --out "$tmp/r" --quiet
expect 0 "train --resume in its own folder" -- train --resume "$tmp/r" --steps 3 --quiet
expect 0 "train --resume with --out its own folder" -- train --resume "$tmp/r" --steps 4 \
  --quiet --out "$tmp/r/."
expect 0 "a second run" -- train "${run[@]}" --out "$tmp/r2"
expect 1 "train --resume into another run's folder" -- train --resume "$tmp/r" --steps 5 \
  --quiet --out "$tmp/r2"
contains err "the output folder '$tmp/r2' holds another run" "--resume into another run"
# --force: a new run replaces the old one; the old run's results go, other files stay.
touch "$tmp/r/notes.txt"
cp "$tmp/r/checkpoint.safetensors" "$tmp/resumed.safetensors"
expect 0 "train --force" -- train "${run[@]}" --seed 2 --force --out "$tmp/r"
cmp -s "$tmp/r/checkpoint.safetensors" "$tmp/resumed.safetensors" && fail "--force kept the old checkpoint"
[ ! -e "$tmp/r/results.csv" ] && [ ! -e "$tmp/r/results.json" ] ||
  fail "--force left the old run's eval results: $(ls "$tmp/r")"
[ -e "$tmp/r/notes.txt" ] || fail "--force removed a file that is not a run's"
# Absent, empty, unrelated: fine.
mkdir "$tmp/empty" "$tmp/mine"
touch "$tmp/mine/README.txt"
expect 0 "train into an empty folder" -- train "${run[@]}" --out "$tmp/empty"
expect 0 "train into a folder without a run" -- train "${run[@]}" --out "$tmp/mine"

# sweep: refused in a train's folder and in its own; --force replaces the train run.
expect 0 "sweep into an absent folder" -- sweep "${grid[@]}" --out "$tmp/s"
expect 1 "sweep into its own folder again" -- sweep "${grid[@]}" --out "$tmp/s"
one_line "sweep's refusal"
contains err "sweep: the output folder '$tmp/s' holds another run (length_generalization.svg, results.csv, results.json); pass --force to replace it, or give another --out; nothing was done" \
  "sweep's refusal"
expect 1 "sweep into a train's folder" -- sweep "${grid[@]}" --out "$tmp/r"
contains err "holds another run (checkpoint.safetensors)" "sweep names the checkpoint it found"
expect 0 "sweep --force into a train's folder" -- sweep "${grid[@]}" --force --out "$tmp/r"
[ ! -e "$tmp/r/checkpoint.safetensors" ] || fail "sweep --force left the train's checkpoint"
[ -s "$tmp/r/results.csv" ] && [ -e "$tmp/r/notes.txt" ] || fail "sweep --force: $(ls "$tmp/r")"

# demo: refused before any training; --force replaces a sweep (its files, its charts).
expect 1 "demo into a sweep's folder" -- demo "${demo[@]}" --out "$tmp/s"
one_line "demo's refusal"
contains err "demo: the output folder '$tmp/s' holds another run (length_generalization.svg, results.csv, results.json); pass --force to replace it, or give another --out" \
  "demo's refusal"
[ ! -e "$tmp/s/checkpoints" ] || fail "a refused demo made its checkpoints folder"
cp "$tmp/s/length_generalization.svg" "$tmp/s/length_generalization_task_copy.svg"
mkdir "$tmp/s/checkpoints"
touch "$tmp/s/checkpoints/old-seed9.safetensors"
expect 0 "demo --force into a sweep's folder" -- demo "${demo[@]}" --force --out "$tmp/s"
for f in summary.md results.csv extension.svg length_generalization.svg; do
  [ -s "$tmp/s/$f" ] || fail "demo --force did not write $f"
done
[ ! -e "$tmp/s/length_generalization_task_copy.svg" ] || fail "demo --force left a sweep chart"
[ ! -e "$tmp/s/checkpoints/old-seed9.safetensors" ] || fail "demo --force left an old checkpoint"
ls "$tmp/s/checkpoints/"learned-seed1*.safetensors >/dev/null 2>&1 ||
  fail "demo --force removed its own checkpoints: $(ls "$tmp/s/checkpoints")"

for cmd in train sweep demo; do
  expect 0 "$cmd --help" -- "$cmd" --help
  contains out "--force" "$cmd --help lists --force"
done
finish output_folder_cli
