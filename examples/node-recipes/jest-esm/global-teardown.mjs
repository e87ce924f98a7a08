export default async function () {
  await globalThis.mediagen.close();
}
