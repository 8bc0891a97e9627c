/** ", about N s left" from the pace of the items done so far in a stage, or "" before the first. */
export function timeLeft(
  elapsedMs: number,
  event: { readonly done: number; readonly total: number },
): string {
  if (event.done <= 0 || event.done >= event.total) return "";
  const seconds = ((elapsedMs / event.done) * (event.total - event.done)) / 1000;
  return seconds >= 90
    ? `, about ${Math.round(seconds / 60)} min left`
    : `, about ${Math.ceil(seconds)} s left`;
}
