/**
 * ResNet-20 for 32×32 images (He et al. 2016, the CIFAR-10 network): a 3×3 stem of 16
 * channels, three stages of three basic blocks at 16, 32 and 64 channels (the second and
 * third halve the resolution in their first block), global average pooling and a linear
 * classifier; 19 convolutions and the classifier make the 20 layers. Member names are the
 * common PyTorch ones (conv1, bn1, layer1..3.{i}.conv1/bn1/conv2/bn2, a block's projection
 * shortcut as `shortcut.0` (1×1 conv) and `shortcut.1` (BatchNorm), fc), so a PyTorch state
 * dict of the same network loads by name.
 */
import { AdaptiveAvgPool2d, BatchNorm2d, Conv2d, type Device, Linear, Module, Sequential, type Variable } from "../index.ts";

/** Two 3×3 convolutions with BatchNorm and a residual; a 1×1 projection where the shape changes. */
export class BasicBlock extends Module {
  /** 3×3 convolution inChannels → channels at the block's stride, padding 1, no bias. */
  readonly conv1: Conv2d;
  /** BatchNorm after conv1. */
  readonly bn1: BatchNorm2d;
  /** 3×3 convolution channels → channels, stride 1, padding 1, no bias. */
  readonly conv2: Conv2d;
  /** BatchNorm after conv2, before the residual sum. */
  readonly bn2: BatchNorm2d;
  /** 1×1 convolution at the stride then BatchNorm, when the stride or the width changes; else absent (identity). */
  readonly shortcut?: Sequential;

  /**
   * A block with fresh layers (PyTorch's default inits).
   * @param inChannels Channels of the block's input.
   * @param channels Channels of its output.
   * @param stride 2 halves the resolution (conv1 and the shortcut), 1 keeps it.
   * @param device Device of the parameters; default `Device.default`.
   */
  constructor(inChannels: number, channels: number, stride: number, device?: Device) {
    super();
    this.conv1 = new Conv2d(inChannels, channels, 3, { stride, padding: 1, bias: false, device });
    this.bn1 = new BatchNorm2d(channels, { device });
    this.conv2 = new Conv2d(channels, channels, 3, { stride: 1, padding: 1, bias: false, device });
    this.bn2 = new BatchNorm2d(channels, { device });
    if (stride !== 1 || inChannels !== channels) {
      this.shortcut = new Sequential(new Conv2d(inChannels, channels, 1, { stride, bias: false, device }), new BatchNorm2d(channels, { device }));
    }
  }

  /** relu(bn2(conv2(relu(bn1(conv1 x)))) + shortcut(x)): [N, in, H, W] → [N, channels, H/stride, W/stride]. */
  forward(x: Variable): Variable {
    const y = this.bn2.forward(this.conv2.forward(this.bn1.forward(this.conv1.forward(x)).relu()));
    return y.add(this.shortcut ? this.shortcut.forward(x) : x).relu();
  }
}

/** Options of {@link ResNet20}. */
export interface ResNet20Options {
  /** Input channels: 3 for CIFAR-10, 1 for MNIST padded to 32×32. Default 1. */
  inChannels?: number;
  /** Classes of the classifier. Default 10. */
  numClasses?: number;
  /**
   * Zero padding of the 3×3 stem. Default 1 (32×32 in, 32×32 out). 3 gives a 28×28 image
   * (MNIST) the 32×32 grid of the stages, the same as padding the image to 32×32 with zeros first.
   */
  stemPadding?: number;
  /** Device of the parameters; default `Device.default`. */
  device?: Device;
}

/**
 * ResNet-20: x [N, inChannels, 32, 32] (any size the three stages divide) to logits [N, numClasses].
 * Weights as each layer's PyTorch default (Conv2d kaiming-uniform, BatchNorm ones and zeros).
 */
export class ResNet20 extends Module {
  /** The stem: 3×3 convolution inChannels → 16, no bias. */
  readonly conv1: Conv2d;
  /** BatchNorm after the stem. */
  readonly bn1: BatchNorm2d;
  /** Three {@link BasicBlock}s at 16 channels, full resolution. */
  readonly layer1: Sequential;
  /** Three blocks at 32 channels; the first halves the resolution. */
  readonly layer2: Sequential;
  /** Three blocks at 64 channels; the first halves the resolution. */
  readonly layer3: Sequential;
  /** Global average pooling to [N, 64, 1, 1]. */
  readonly pool: AdaptiveAvgPool2d;
  /** The classifier, Linear(64, numClasses). */
  readonly fc: Linear;

  /**
   * The network with fresh weights (PyTorch's default inits).
   * @throws {RangeError} From the layers, for a channel or class count that is not a positive integer.
   */
  constructor(options: ResNet20Options = {}) {
    super();
    const { inChannels = 1, numClasses = 10, stemPadding = 1, device } = options;
    this.conv1 = new Conv2d(inChannels, 16, 3, { padding: stemPadding, bias: false, device });
    this.bn1 = new BatchNorm2d(16, { device });
    const stage = (from: number, to: number, stride: number) =>
      new Sequential(new BasicBlock(from, to, stride, device), new BasicBlock(to, to, 1, device), new BasicBlock(to, to, 1, device));
    this.layer1 = stage(16, 16, 1);
    this.layer2 = stage(16, 32, 2);
    this.layer3 = stage(32, 64, 2);
    this.pool = new AdaptiveAvgPool2d(1);
    this.fc = new Linear(64, numClasses, { device });
  }

  /** x [N, inChannels, H, W] → logits [N, numClasses]. */
  forward(x: Variable): Variable {
    const h = this.layer3.forward(this.layer2.forward(this.layer1.forward(this.bn1.forward(this.conv1.forward(x)).relu())));
    return this.fc.forward(this.pool.forward(h).flatten(1));
  }
}
