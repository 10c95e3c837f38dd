import { flodl } from "flodl-webgpu/vite";
export default { plugins: [flodl()] };
