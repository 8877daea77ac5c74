"""The local runtimes a cross-encoder runs on: the backends (torch, ONNX Runtime, OpenVINO) and their exports
(`backends`), the machine's facts and the `auto` calibration (`machine`), the hardware's ceiling (`ceiling`),
OpenVINO's pair-per-request scoring (`openvino_pairs`) and the micro-batcher (`batching`)."""
