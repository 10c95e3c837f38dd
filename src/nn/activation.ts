/** Activation modules (PyTorch names), each a thin Module over a Variable method. */
import type { Variable } from "../autograd/mod.ts";
import { Module } from "./module.ts";
import { logSoftmax, softmax } from "./functional.ts";

export class ReLU extends Module {
  forward(x: Variable): Variable {
    return x.relu();
  }
}
export class LeakyReLU extends Module {
  constructor(readonly negativeSlope = 0.01) {
    super();
  }
  forward(x: Variable): Variable {
    return x.leakyRelu(this.negativeSlope);
  }
}
export class GELU extends Module {
  constructor(readonly approximate: "none" | "tanh" = "none") {
    super();
  }
  forward(x: Variable): Variable {
    return x.gelu(this.approximate);
  }
}
export class SiLU extends Module {
  forward(x: Variable): Variable {
    return x.silu();
  }
}
export class Sigmoid extends Module {
  forward(x: Variable): Variable {
    return x.sigmoid();
  }
}
export class Tanh extends Module {
  forward(x: Variable): Variable {
    return x.tanh();
  }
}
export class Softplus extends Module {
  constructor(readonly beta = 1, readonly threshold = 20) {
    super();
  }
  forward(x: Variable): Variable {
    return x.softplus(this.beta, this.threshold);
  }
}
export class Softmax extends Module {
  constructor(readonly dim = -1) {
    super();
  }
  forward(x: Variable): Variable {
    return softmax(x, this.dim);
  }
}
export class LogSoftmax extends Module {
  constructor(readonly dim = -1) {
    super();
  }
  forward(x: Variable): Variable {
    return logSoftmax(x, this.dim);
  }
}
export class Identity extends Module {
  forward(x: Variable): Variable {
    return x;
  }
}
