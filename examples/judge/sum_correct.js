// Stdin-style submission in JavaScript.
const lines = require('fs').readFileSync(0, 'utf8').split('\n');
for (const line of lines) {
  if (line.trim()) {
    const [a, b] = line.trim().split(/\s+/).map(Number);
    console.log(a + b);
  }
}
