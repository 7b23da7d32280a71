// Function-style submission in JavaScript: a top-level function is enough.
function solve(nums, target) {
  const seen = new Map();
  for (let i = 0; i < nums.length; i++) {
    if (seen.has(target - nums[i])) return [seen.get(target - nums[i]), i];
    seen.set(nums[i], i);
  }
  return null;
}

const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;

async function stats(xs) {
  // An async function: the harness awaits the promise.
  return { min: Math.min(...xs), max: Math.max(...xs), mean: mean(xs) };
}

module.exports = { mean };
