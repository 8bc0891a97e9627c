/** The port `bringup up` brings up when none is named. */
export const DEFAULT_PORT = "mimo-v2.6-flash";
