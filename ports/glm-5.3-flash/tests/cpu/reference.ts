import { portReference } from "../../../../test/helpers/port-reference.js";
import { portModel } from "../../model.js";

export const { referenceConfig, referenceModel } = portReference("glm-5.3-flash", portModel);
