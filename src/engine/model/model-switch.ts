/** A switch a model's blocks read at run time (for example which KDA prefill form to run). */
export interface ModelSwitch {
  readonly name: string;
  readonly values: readonly string[];
  readonly default: string;
  readonly description: string;
}
