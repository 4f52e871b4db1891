/* global module */
// The development chain (`hardhat node`, started by scripts/chain.mjs): Hardhat's network with its
// default funded accounts, mining each transaction at once and an empty block every second, so
// confirmations accrue without traffic.
module.exports = {
  networks: {
    hardhat: {
      chainId: 31337,
      mining: { auto: true, interval: 1000 },
    },
  },
};
