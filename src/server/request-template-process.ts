// The process that renders requests' own chat templates under the heap budget its parent set
// (--max-old-space-size) and is killed past the time budget: a template is the client's code and
// may loop or allocate without end; a process, unlike a thread, can die of it alone.
import { isBringupError } from "../common/errors.js";
import { renderRequestTemplate } from "../engine/index.js";
import type { FromTemplateProcess, ToTemplateProcess } from "./request-template.js";

const send = (message: FromTemplateProcess) => process.send?.(message);

process.on("message", (job: ToTemplateProcess) => {
  try {
    const text = renderRequestTemplate(job.template, job.context);
    if (text.length > job.maxChars) send({ type: "too-long", chars: text.length });
    else send({ type: "rendered", text });
  } catch (error) {
    if (!isBringupError(error)) throw error;
    send({ type: "failed", code: error.code, message: error.message });
  }
});
// The parent going away ends this process too.
process.on("disconnect", () => process.exit(0));
send({ type: "ready" });
