// `express4` is Express 4 installed under an alias, so tests can run the kit on both majors. Its API the tests use
// (the application factory) is the one @types/express describes.
declare module 'express4' {
  import express from 'express';
  export default express;
}
