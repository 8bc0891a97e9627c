import { deviceRunNotice, generatedNotice, pinsStamp, pinsStampPath } from "./install-script.js";
import { serveArgs } from "./serve.js";
import { shellQuote } from "./shell.js";
import type { Recipe } from "./source.js";

// Placeholders no manifest value can equal (values have no control characters).
const MODEL = "\u0000model";
const HTTP_PORT = "\u0000port";

/** The gate kind that holds the device plugin's logprobs to the reference engine's. */
export const DEVICE_GATE = "device-logprobs";

/** run_gates.sh's status for a port vLLM does not serve: its pins matched, and there is nothing to gate. */
export const NOT_SERVED_EXIT = 3;

/** What checks a not-served port's device code block by block on the CPU instead. */
export function blocksCheckCommand(port: string): string {
  return `bringup device check ${port}`;
}

/**
 * tests/hpu/run_gates.sh: in the image the recipe builds, serves the port's tiny reference
 * checkpoint with vllm-gaudi and the same directory with bringup's reference engine, runs the
 * device-vs-reference gate between them; then, when MODEL names the released weights, serves them
 * as the port states and runs the port's gates against them. Servers stop on any exit; the script
 * exits with the first failing gate's status. It refuses to serve in an image install.sh has not
 * verified. For a port whose device code vLLM does not serve, it checks the pins the same way and
 * then exits NOT_SERVED_EXIT, serving nothing, saying where the port's blocks are checked instead.
 */
export function renderRunGatesScript(recipe: Recipe): string {
  return recipe.notServed === undefined ? servedScript(recipe) : notServedScript(recipe, recipe.notServed);
}

/** The lines both kinds of script start with: what generated it and whether it ran on a device. */
function header(recipe: Recipe): string {
  return `#!/bin/sh
${generatedNotice(recipe.port, "#")}
#
${deviceRunNotice(recipe, "#")}
#`;
}

/** Exits 2 unless install.sh recorded exactly this recipe's pins under $root; `what` goes on only then. */
function pinsCheck(recipe: Recipe, what: string): string {
  const stamp = pinsStampPath(recipe.port);
  return `# ${what} only in an image whose pins install.sh verified.
stamp=$root${shellQuote(stamp)}
expected=$(cat <<'BRINGUP_PINS'
${pinsStamp(recipe)}
BRINGUP_PINS
)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$expected" ]; then
  printf 'run_gates.sh: %s is missing or differs from the pins of port %s; run this inside the image ports/%s/recipe/Dockerfile builds (its install.sh records them).\\n' ${shellQuote(stamp)} "$port" "$port" >&2
  exit 2
fi`;
}

/** `text` as comment lines starting with `lead`, of at most 100 characters, broken between words. */
function commentLines(text: string, lead = "#"): string {
  const lines: string[] = [];
  let line = lead;
  for (const word of text.split(" ")) {
    if (line.length > lead.length && line.length + 1 + word.length > 100) {
      lines.push(line);
      line = lead;
    }
    line += ` ${word}`;
  }
  return [...lines, line].join("\n");
}

function notServedScript(recipe: Recipe, notServed: NonNullable<Recipe["notServed"]>): string {
  const q = shellQuote;
  const check = blocksCheckCommand(recipe.port);
  const why = notServed.why.replace(/\.$/, "");
  return `${header(recipe)}
${commentLines(`No device gates of port ${recipe.port} run in the image ports/${recipe.port}/recipe/Dockerfile builds: vLLM does not serve the port's device code here, so neither vllm-gaudi nor a ${DEVICE_GATE} gate can run on it. Why, from the port's manifest (reference.device_blocks.not_served):`)}
${commentLines(notServed.why, "#  ")}
${commentLines(`This script serves nothing and runs no gate: it checks that install.sh verified the image's pins, then exits ${NOT_SERVED_EXIT} saying so. The port's blocks are checked one by one against bringup's reference engine on the CPU, outside this image, by \`${check}\` (records ${notServed.record}).`)}
#
# Exit status: 2 when the image's pins are not the ones install.sh records; ${NOT_SERVED_EXIT} when they
# are, as nothing of this port is served here. It never exits 0.
#
#   IMAGE_ROOT  the image's root (default /), where install.sh recorded the pins
set -eu

port=${q(recipe.port)}
root=\${IMAGE_ROOT:-/}
root=\${root%/}

${pinsCheck(recipe, "Say why nothing is served")}

printf 'run_gates.sh: vLLM does not serve the device code of port %s, so nothing is served or gated here (%s); its blocks are checked one by one against the reference engine on the CPU by %s (records %s).\\n' "$port" ${q(why)} ${q(check)} ${q(notServed.record)} >&2
exit ${NOT_SERVED_EXIT}
`;
}

function servedScript(recipe: Recipe): string {
  const q = shellQuote;
  // $model and $http_port stay shell words; every other argument is a quoted literal.
  const word = (arg: string) => (arg === MODEL ? '"$model"' : arg === HTTP_PORT ? '"$http_port"' : q(arg));
  const args = (size: "full" | "tiny") =>
    serveArgs(recipe, MODEL, HTTP_PORT, size)
      .map((group) => group.map(word).join(" "))
      .join(" \\\n  ");
  const python = `python${recipe.python.value}`;
  return `${header(recipe)}
# Device gates of port ${recipe.port}, run inside the image ports/${recipe.port}/recipe/Dockerfile builds:
#  1. serves the port's tiny reference checkpoint (TINY_MODEL) with vllm-gaudi and the same
#     directory with bringup's reference engine, and runs \`bringup gate ${recipe.port} --only ${DEVICE_GATE}\`:
#     the device plugin's prompt logprobs and greedy tokens against the reference engine's;
#  2. when MODEL is set, serves the released weights as the port states (tensor parallel over
#     ${recipe.cards} cards${recipe.maxModelLen === undefined ? "" : `, max model length ${recipe.maxModelLen}`}, the environment below) and runs \`bringup gate ${recipe.port}\` against them.
# It exits with the first failing gate's status, stopping every server it started.
#
#   TINY_MODEL      the port's tiny reference checkpoint directory (required; \`bringup up ${recipe.port}\`
#                   writes it under .cache/bringup/models/)
#   MODEL           the released weights, a directory or a model id (optional: step 2 runs only with it)
#   PORT            vllm-gaudi's port on 127.0.0.1 (default 8000)
#   REFERENCE_PORT  the reference engine's port on 127.0.0.1 (default 8001)
#   HEALTH_TIMEOUT  seconds to wait for each /health (default 3600: large checkpoints load slowly)
#   BRINGUP         the bringup command (default bringup). The image holds no Node: mount a bringup
#                   checkout and Node 20 into the container and point BRINGUP at its dist/src/cli/main.js
#   PYTHON          the interpreter with vLLM (default ${python}, the pinned one)
#   IMAGE_ROOT      the image's root (default /), where install.sh recorded the pins
set -eu

port=${q(recipe.port)}
tiny=\${TINY_MODEL:?set TINY_MODEL to the tiny reference checkpoint directory of the port}
http_port=\${PORT:-8000}
ref_port=\${REFERENCE_PORT:-8001}
timeout=\${HEALTH_TIMEOUT:-3600}
bringup=\${BRINGUP:-bringup}
python=\${PYTHON:-${q(python)}}
root=\${IMAGE_ROOT:-/}
root=\${root%/}

for value in "$http_port" "$ref_port" "$timeout"; do
  case $value in
    '' | *[!0-9]*) printf 'run_gates.sh: PORT, REFERENCE_PORT and HEALTH_TIMEOUT must be whole numbers, not %s\\n' "$value" >&2; exit 2 ;;
  esac
done

${pinsCheck(recipe, "Serve")}
if ! command -v "$bringup" >/dev/null 2>&1; then
  printf 'run_gates.sh: cannot run %s; mount a bringup checkout and Node 20 into the container and set BRINGUP to its dist/src/cli/main.js.\\n' "$bringup" >&2
  exit 2
fi

${recipe.env.map(([name, value]) => `${name}=${q(value)}\nexport ${name}`).join("\n")}

# Stop the servers however this script ends; INT and TERM exit so that the EXIT trap runs.
servers=
stop_servers() {
  for pid in $servers; do kill "$pid" 2>/dev/null || true; done
  for pid in $servers; do wait "$pid" 2>/dev/null || true; done
  servers=
}
trap stop_servers EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

healthy() {
  "$python" -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=5)' "$1/health" >/dev/null 2>&1
}

# wait_healthy WHAT PID URL: waits for URL/health while PID runs, up to HEALTH_TIMEOUT seconds.
wait_healthy() {
  waited=0
  until healthy "$3"; do
    if ! kill -0 "$2" 2>/dev/null; then
      printf 'run_gates.sh: %s exited before %s/health answered; its log is above.\\n' "$1" "$3" >&2
      exit 1
    fi
    if [ "$waited" -ge "$timeout" ]; then
      printf 'run_gates.sh: %s did not answer %s/health within %s s; raise HEALTH_TIMEOUT if loading takes longer.\\n' "$1" "$3" "$timeout" >&2
      exit 1
    fi
    sleep 1
    waited=$((waited + 1))
  done
}

endpoint=http://127.0.0.1:$http_port
reference=http://127.0.0.1:$ref_port
status=0

# 1. The device plugin on the tiny checkpoint against the reference engine on the same directory.
model=$tiny
"$python" \\
  ${args("tiny")} &
device=$!
servers=$device
"$bringup" serve "$tiny" --host 127.0.0.1 --port "$ref_port" --served-model-name "$port" --max-model-len ${recipe.tinyMaxModelLen} &
engine=$!
servers="$device $engine"
wait_healthy 'vllm-gaudi on the tiny checkpoint' "$device" "$endpoint"
wait_healthy 'the reference engine' "$engine" "$reference"
"$bringup" gate "$port" --endpoint "$endpoint" --reference "$reference" --only ${DEVICE_GATE} || status=$?
stop_servers

# 2. The released weights with the port's own gates.
if [ -z "\${MODEL:-}" ]; then
  printf 'run_gates.sh: MODEL is not set, so only the tiny checkpoint was gated; set it to the released weights to run the port'\\''s gates too.\\n' >&2
  exit "$status"
fi
model=$MODEL
"$python" \\
  ${args("full")} &
servers=$!
wait_healthy 'vllm-gaudi on MODEL' "$servers" "$endpoint"
gates=0
"$bringup" gate "$port" --endpoint "$endpoint" || gates=$?
if [ "$status" -eq 0 ]; then status=$gates; fi
exit "$status"
`;
}
