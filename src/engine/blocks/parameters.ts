/** How a tiny model initialises a parameter: normal draws scaled by fan-in (its last dimension), or ones. */
export type TinyInit = "fan-in" | "ones";

/** One parameter a block reads: its checkpoint name, its shape from the config, its tiny initialisation. */
export interface ParameterDecl {
  readonly name: string;
  readonly shape: readonly number[];
  readonly init: TinyInit;
}
