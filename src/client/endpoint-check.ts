import { BringupError, isBringupError } from "../common/errors.js";
import { Endpoint } from "./endpoint.js";
import type { RequestOptions } from "./http.js";

/** How long an endpoint may take to list its models before a command counts it as down. */
export const ENDPOINT_CHECK_TIMEOUT_MS = 4000;

/**
 * Checks an endpoint before a command does any work: it answers within a few seconds and lists a
 * model on /v1/models (with its context length, when the server states it). Throws the request's
 * error as one line that starts with the flag that named the URL.
 */
export async function checkEndpoint(
  url: string,
  flag: string,
  options: RequestOptions = {},
): Promise<Endpoint> {
  try {
    return await Endpoint.connect(url, options, ENDPOINT_CHECK_TIMEOUT_MS);
  } catch (error) {
    if (!isBringupError(error)) throw error;
    const what =
      error.code === "ENDPOINT_TIMEOUT"
        ? `${error.subject ?? url} did not answer within ${ENDPOINT_CHECK_TIMEOUT_MS / 1000} s; check that the server is up and not overloaded.`
        : error.message;
    throw new BringupError(error.code, `${flag} ${url}: ${what}`, { subject: url, cause: error });
  }
}

/** One line of what the check found: the model served and its context length. */
export function describeEndpoint(endpoint: Endpoint): string {
  const context =
    endpoint.maxModelLen === undefined ? "context length not stated" : `max context ${endpoint.maxModelLen}`;
  return `${endpoint.url} serves ${endpoint.model} (${context})`;
}
