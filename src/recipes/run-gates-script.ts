import { generatedNotice, pinsStamp, pinsStampPath } from "./install-script.js";
import { serveArgs } from "./serve.js";
import { shellQuote } from "./shell.js";
import type { Recipe } from "./source.js";

// Placeholders no manifest value can equal (values have no control characters).
const MODEL = "\u0000model";
const HTTP_PORT = "\u0000port";

/**
 * tests/hpu/run_gates.sh: serves the port as validated, waits for /health, runs `bringup gate`
 * against the server, stops it on any exit, and exits with the gates' status. It runs in the image
 * the recipe builds, where install.sh recorded the pins; it refuses to serve anywhere else.
 */
export function renderRunGatesScript(recipe: Recipe): string {
  const q = shellQuote;
  const stamp = pinsStampPath(recipe.port);
  // $model and $http_port stay shell words; every other argument is a quoted literal.
  const word = (arg: string) => (arg === MODEL ? '"$model"' : arg === HTTP_PORT ? '"$http_port"' : q(arg));
  const argLines = serveArgs(recipe, MODEL, HTTP_PORT).map((group) => group.map(word).join(" "));
  return `#!/bin/sh
${generatedNotice(recipe.port, "#")}
#
# Device gates of port ${recipe.port}: serves it with vllm-gaudi as it was validated (tensor parallel
# over ${recipe.cards} cards, max model length ${recipe.maxModelLen}, the environment below), waits for /health,
# runs \`bringup gate ${recipe.port}\` against the server, stops the server and exits with the gates' status.
# Run it inside the image ports/${recipe.port}/recipe/Dockerfile builds, on the target host.
#
#   MODEL           the weights to serve, a directory or a model id (required)
#   PORT            the server's port on 127.0.0.1 (default 8000)
#   HEALTH_TIMEOUT  seconds to wait for /health (default 3600: large checkpoints load slowly)
#   BRINGUP         the bringup command (default bringup, which must be on PATH)
#   PYTHON          the interpreter with vLLM (default python${recipe.python}, the pinned one)
#   IMAGE_ROOT      the image's root (default /), where install.sh recorded the pins
set -eu

port=${q(recipe.port)}
model=\${MODEL:?set MODEL to the weights directory or model id to serve}
http_port=\${PORT:-8000}
timeout=\${HEALTH_TIMEOUT:-3600}
bringup=\${BRINGUP:-bringup}
python=\${PYTHON:-${q(`python${recipe.python}`)}}
root=\${IMAGE_ROOT:-/}
root=\${root%/}

case $http_port in
  '' | *[!0-9]*) printf 'run_gates.sh: PORT must be a port number, not %s\\n' "$http_port" >&2; exit 2 ;;
esac
case $timeout in
  '' | *[!0-9]*) printf 'run_gates.sh: HEALTH_TIMEOUT must be whole seconds, not %s\\n' "$timeout" >&2; exit 2 ;;
esac

# Serve only in an image whose pins install.sh verified.
stamp=$root${q(stamp)}
expected=$(cat <<'BRINGUP_PINS'
${pinsStamp(recipe)}
BRINGUP_PINS
)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$expected" ]; then
  printf 'run_gates.sh: %s is missing or differs from the pins of port %s; run this inside the image ports/%s/recipe/Dockerfile builds (its install.sh records them).\\n' ${q(stamp)} "$port" "$port" >&2
  exit 2
fi

${recipe.env.map(([name, value]) => `${name}=${q(value)}\nexport ${name}`).join("\n")}

"$python" \\
  ${argLines.join(" \\\n  ")} &
server=$!

# Stop the server however this script ends; INT and TERM exit so that the EXIT trap runs.
trap 'kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

endpoint=http://127.0.0.1:$http_port
healthy() {
  "$python" -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=5)' "$endpoint/health" >/dev/null 2>&1
}
waited=0
until healthy; do
  if ! kill -0 "$server" 2>/dev/null; then
    printf 'run_gates.sh: the server exited before %s/health answered; its log is above.\\n' "$endpoint" >&2
    exit 1
  fi
  if [ "$waited" -ge "$timeout" ]; then
    printf 'run_gates.sh: %s/health did not answer within %s s; raise HEALTH_TIMEOUT if loading takes longer.\\n' "$endpoint" "$timeout" >&2
    exit 1
  fi
  sleep 1
  waited=$((waited + 1))
done

status=0
"$bringup" gate "$port" --endpoint "$endpoint" || status=$?
exit "$status"
`;
}
