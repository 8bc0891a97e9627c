import { portReference } from "../../../../test/helpers/port-reference.js";
import { portModel } from "../../model.js";

export const { referenceConfig, referenceFiles, referenceModel } = portReference("kimi-k2.7-code", portModel);
