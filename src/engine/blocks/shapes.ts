import { BringupError } from "../../common/errors.js";

/**
 * Checks that a kernel argument holds exactly `expected` values; kernels call this at their edge so a
 * layout mistake fails loudly instead of reading past a tensor or leaving part of an output unwritten.
 */
export function expectLength(
  kernel: string,
  name: string,
  array: ArrayLike<number>,
  expected: number,
  layout: string,
): void {
  if (array.length !== expected) {
    throw new BringupError(
      "KERNEL_SHAPE",
      `${kernel}: ${name} has ${array.length} values but the layout ${layout} needs ${expected}; ` +
        "check the dimensions passed and the tensor's layout.",
      { subject: name },
    );
  }
}

/** Checks that every dimension is a positive integer. */
export function expectDims(kernel: string, dims: Record<string, number>): void {
  for (const [name, value] of Object.entries(dims)) {
    if (!Number.isInteger(value) || value < 1) {
      throw new BringupError(
        "KERNEL_SHAPE",
        `${kernel}: dimension ${name} must be a positive integer, got ${value}.`,
        {
          subject: name,
        },
      );
    }
  }
}
