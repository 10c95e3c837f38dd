export { ArrayDataSet, batchDatasetFrom, checkIndices, toDevice } from "./dataset.ts";
export type { BatchDataSet, DataSet, FieldDType, FieldSpec, HostArray, HostBatch, HostField } from "./dataset.ts";
export { IDX_IMAGES_MAGIC, IDX_LABELS_MAGIC, parseIdx } from "./idx.ts";
export type { IdxArray } from "./idx.ts";
export { loadMnist, MNIST_MEAN, MNIST_STD, MnistDataSet } from "./mnist.ts";
export type { MnistIdxOptions, MnistOptions } from "./mnist.ts";
