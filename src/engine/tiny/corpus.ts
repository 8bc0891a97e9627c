import { readdir, readFile } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { BringupError } from "../../common/errors.js";

/** The corpus/ folder shipped with the package (three levels above src/engine/tiny, four above dist/). */
export function shippedCorpusDir(): string {
  const here = dirname(fileURLToPath(import.meta.url));
  const up = here.includes(join("dist", "src")) ? "../../../.." : "../../..";
  return resolve(here, up, "corpus");
}

/** All *.txt files of `dir` in name order, joined by blank lines. */
export async function readCorpus(dir: string = shippedCorpusDir()): Promise<string> {
  let names: string[];
  try {
    names = (await readdir(dir)).filter((n) => n.endsWith(".txt")).sort();
  } catch (cause) {
    throw new BringupError(
      "CORPUS_MISSING",
      `the text corpus folder ${dir} cannot be read; reinstall bringup or pass a corpus folder.`,
      {
        subject: dir,
        cause,
      },
    );
  }
  if (names.length === 0) {
    throw new BringupError("CORPUS_MISSING", `the corpus folder ${dir} has no .txt files.`, { subject: dir });
  }
  const texts = await Promise.all(names.map((n) => readFile(join(dir, n), "utf8")));
  return texts.join("\n\n");
}
